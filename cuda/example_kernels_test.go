package cuda_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/kernels"
)

// exampleSetup is what the examples below share: device 0's context, a
// stream and internal/kernels' TypedPTX loaded.
func exampleSetup() (*cuda.Context, *cuda.Stream, *cuda.Module, func()) {
	devs, err := cuda.Devices()
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := devs[0].Context()
	if err != nil {
		log.Fatal(err)
	}
	s, err := ctx.NewStream()
	if err != nil {
		log.Fatal(err)
	}
	mod, err := cuda.LoadModule(ctx, kernels.TypedPTX)
	if err != nil {
		log.Fatal(err)
	}
	return ctx, s, mod, func() { mod.Close(); s.Close(); ctx.Close() }
}

// Struct passes struct Vecs { const float *a, *b; float *c; int n; } by
// value to add_vecs(Vecs); the three Slices are uses of their memory.
func ExampleStruct() {
	_, s, mod, done := exampleSetup()
	defer done()
	addVecs, err := mod.Func("add_vecs")
	if err != nil {
		log.Fatal(err)
	}
	a, _ := cuda.Alloc[float32](s, 3)
	b, _ := cuda.Alloc[float32](s, 3)
	c, _ := cuda.Alloc[float32](s, 3)
	defer a.Free()
	defer b.Free()
	defer c.Free()
	cuda.CopyToDevice(s, a, []float32{1, 2, 3})
	cuda.CopyToDevice(s, b, []float32{10, 20, 30})
	err = s.Launch(addVecs, cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), cuda.Struct(a.Arg(), b.Arg(), c.Arg(), cuda.Int32(3)))
	if err != nil {
		log.Fatal(err)
	}
	out := make([]float32, 3)
	cuda.CopyToHost(s, out, c)
	fmt.Println(out)
	// Output: [11 22 33]
}

// Global fills a __constant__ variable that a kernel reads.
func ExampleGlobal() {
	_, s, mod, done := exampleSetup()
	defer done()
	bias, err := cuda.Global[float32](mod, "bias") // __constant__ float bias;
	if err != nil {
		log.Fatal(err)
	}
	if err := cuda.CopyToDevice(s, bias, []float32{0.5}); err != nil {
		log.Fatal(err)
	}
	addBias, _ := mod.Func("add_bias")
	x, _ := cuda.Alloc[float32](s, 2)
	defer x.Free()
	cuda.CopyToDevice(s, x, []float32{1, 2})
	if err := s.Launch(addBias, cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), x.Arg(), cuda.Int32(2)); err != nil {
		log.Fatal(err)
	}
	out := make([]float32, 2)
	cuda.CopyToHost(s, out, x)
	fmt.Println(out)
	// Output: [1.5 2.5]
}

// A C++ kernel's launch is checked against the parameter types of its
// mangled name: here an int where axpy(float, const float*, float*, int)
// takes a float.
func ExampleStream_Launch_typeCheck() {
	_, s, mod, done := exampleSetup()
	defer done()
	axpy, _ := mod.Func("axpy")
	x, _ := cuda.Alloc[float32](s, 2)
	defer x.Free()
	err := s.Launch(axpy, cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), cuda.Int32(2), x.Arg(), x.Arg(), cuda.Int32(2))
	fmt.Println(errors.Is(err, cuda.ErrArgs))
	fmt.Println(err)
	// Output:
	// true
	// cuda: Launch axpy(float, float const*, float*, int): argument 0 is an int32 (Int32 or Value), its parameter 0 is float: cuda: kernel arguments do not match the parameters
}

// SetAttribute raises the dynamic shared memory a launch may ask for past
// the default 48 KiB; the occupancy calls say what fits.
func ExampleFunc_SetAttribute() {
	_, s, mod, done := exampleSetup()
	defer done()
	axpy, _ := mod.Func("axpy")
	if err := axpy.SetAttribute(cuda.MaxDynamicSharedMemory, 100<<10); err != nil {
		log.Fatal(err)
	}
	x, _ := cuda.Alloc[float32](s, 2)
	defer x.Free()
	cfg := cuda.Config{Grid: cuda.Grid(1, 1, 1), Block: cuda.Block(256, 1, 1), SharedMem: 100 << 10}
	if err := s.LaunchWith(axpy, cfg, cuda.Float32(2), x.Arg(), x.Arg(), cuda.Int32(2)); err != nil {
		log.Fatal(err)
	}
	n, err := axpy.MaxActiveBlocksPerSM(256, 100<<10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n >= 1)
	// Output: true
}

// A Linker links PTX modules into one image for LoadModule.
func ExampleLinker() {
	ctx, _, _, done := exampleSetup()
	defer done()
	var l cuda.Linker
	l.AddPTX("kernels.ptx", kernels.PTX)
	l.AddPTX("typed.ptx", kernels.TypedPTX)
	image, err := l.Link(ctx)
	if err != nil {
		log.Fatal(err)
	}
	mod, err := cuda.LoadModule(ctx, image)
	if err != nil {
		log.Fatal(err)
	}
	defer mod.Close()
	_, err1 := mod.Func("saxpy")
	_, err2 := mod.Func("add_vecs")
	fmt.Println(err1, err2)
	// Output: <nil> <nil>
}
