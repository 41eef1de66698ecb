package cuda_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/kernels"
)

// Example runs saxpy (y = a*x + y) on the first device.
func Example() {
	devs, err := cuda.Devices()
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := devs[0].Context()
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	s, err := ctx.NewStream()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	mod, err := cuda.LoadModule(ctx, kernels.PTX)
	if err != nil {
		log.Fatal(err)
	}
	defer mod.Close()
	saxpy, err := mod.Func("saxpy")
	if err != nil {
		log.Fatal(err)
	}

	const n = 1000
	hx, hy := make([]float32, n), make([]float32, n)
	for i := range hx {
		hx[i], hy[i] = float32(i), 1
	}
	x, err := cuda.Alloc[float32](s, n)
	if err != nil {
		log.Fatal(err)
	}
	defer x.Free()
	y, err := cuda.Alloc[float32](s, n)
	if err != nil {
		log.Fatal(err)
	}
	defer y.Free()
	if err := cuda.CopyToDevice(s, x, hx); err != nil {
		log.Fatal(err)
	}
	if err := cuda.CopyToDevice(s, y, hy); err != nil {
		log.Fatal(err)
	}
	err = s.Launch(saxpy, cuda.Grid((n+255)/256, 1, 1), cuda.Block(256, 1, 1),
		cuda.Int32(n), cuda.Float32(2), x.Arg(), y.Arg())
	if err != nil {
		log.Fatal(err)
	}
	if err := cuda.CopyToHost(s, hy, y); err != nil { // into a []float32: waits
		log.Fatal(err)
	}
	if err := s.Sync(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println(hy[0], hy[1], hy[999])
	// Output: 1 3 1999
}

// setup returns the first device's context, a stream and the test kernels;
// the examples below use it to stay short.
func setup() (*cuda.Context, *cuda.Stream, *cuda.Module, func()) {
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
	mod, err := cuda.LoadModule(ctx, kernels.PTX)
	if err != nil {
		log.Fatal(err)
	}
	return ctx, s, mod, func() {
		if err := errors.Join(mod.Close(), s.Close(), ctx.Close()); err != nil {
			log.Fatal(err)
		}
	}
}

// Func finds C++ kernels by their demangled names; a name that matches
// several overloads or template instances is an error that lists them.
func ExampleModule_Func() {
	_, _, mod, done := setup()
	defer done()
	f, err := mod.Func("scale<float>")
	if err != nil {
		log.Fatal(err)
	}
	sizes, _ := f.Params()
	fmt.Println(f.Name(), sizes)
	_, err = mod.Func("ops::offset")
	fmt.Println(errors.Is(err, cuda.ErrAmbiguous))
	f, err = mod.Func("ops::offset(int*, int, unsigned long long)")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(f.Name())
	// Output:
	// _Z5scaleIfEvPT_S0_y [8 4 8]
	// true
	// _ZN3ops6offsetEPiiy
}

// Arguments are checked against the kernel's parameters before the launch.
func ExampleStream_Launch() {
	_, s, mod, done := setup()
	defer done()
	saxpy, err := mod.Func("saxpy")
	if err != nil {
		log.Fatal(err)
	}
	x, err := cuda.Alloc[float32](s, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer x.Free()
	// n is a C int: Int64 is the wrong size.
	err = s.Launch(saxpy, cuda.Grid(1, 1, 1), cuda.Block(4, 1, 1), cuda.Int64(4), cuda.Float32(2), x.Arg(), x.Arg())
	fmt.Println(errors.Is(err, cuda.ErrArgs))
	// Output: true
}

// Host functions run on a driver thread in stream order.
func ExampleStream_HostFunc() {
	_, s, _, done := setup()
	defer done()
	ran := make(chan string, 2)
	for _, msg := range []string{"first", "second"} {
		if err := s.HostFunc(func() { ran <- msg }); err != nil {
			log.Fatal(err)
		}
	}
	if err := s.Sync(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-ran, <-ran)
	// Output: first second
}

// Capture records a stream's work into a graph, launched as often as
// needed.
func ExampleStream_Capture() {
	_, s, mod, done := setup()
	defer done()
	addOne, err := mod.Func("add_one_i32")
	if err != nil {
		log.Fatal(err)
	}
	data, err := cuda.Alloc[int32](s, 3)
	if err != nil {
		log.Fatal(err)
	}
	defer data.Free()
	if err := cuda.Zero(s, data); err != nil {
		log.Fatal(err)
	}
	g, err := s.Capture(func(s *cuda.Stream) error {
		return s.Launch(addOne, cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), data.Arg(), cuda.Uint64(3))
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Destroy()
	exec, err := g.Instantiate()
	if err != nil {
		log.Fatal(err)
	}
	defer exec.Destroy()
	for range 5 {
		if err := s.LaunchGraph(exec); err != nil {
			log.Fatal(err)
		}
	}
	out := make([]int32, 3)
	if err := cuda.CopyToHost(s, out, data); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [5 5 5]
}

// Pinned memory copies asynchronously; an event tells when the copy is
// done.
func ExampleAllocPinned() {
	ctx, s, _, done := setup()
	defer done()
	host, err := cuda.AllocPinned[float64](ctx, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer host.Free()
	dev, err := cuda.Alloc[float64](s, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Free()
	if err := cuda.Memset(s, dev, 0); err != nil {
		log.Fatal(err)
	}
	part, err := dev.Slice(1, 3)
	if err != nil {
		log.Fatal(err)
	}
	if err := cuda.CopyToDevice(s, part, []float64{1.5, 2.5}); err != nil {
		log.Fatal(err)
	}
	if err := cuda.CopyToHost(s, host, dev); err != nil { // asynchronous
		log.Fatal(err)
	}
	ev, err := s.Record()
	if err != nil {
		log.Fatal(err)
	}
	defer ev.Close()
	if err := ev.Sync(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println(host.Data())
	// Output: [0 1.5 2.5 0]
}

// ExampleLostError shows what a program does with a kernel fault: report
// the launches that may have caused it, and stop using the device (the
// process must restart to use it again). It is not run: a fault loses the
// device for the whole process. With PURECUDA_DEBUG=sync (or
// cuda.SetDebug(cuda.DebugSync)) the launch that faulted reports it
// itself, and Launches holds exactly that launch.
func ExampleLostError() {
	var s *cuda.Stream // a stream whose kernels may fault
	if err := s.Sync(context.Background()); err != nil {
		var lost *cuda.LostError
		if errors.As(err, &lost) {
			for _, l := range lost.Launches {
				file, line, _ := l.Caller()
				fmt.Printf("%s launched at %s:%d may have faulted\n", l.Kernel, file, line)
			}
			log.Fatalf("device %d is lost: %v", lost.Device, lost.Result())
		}
		log.Fatal(err)
	}
}
