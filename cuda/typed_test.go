package cuda_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
)

// typedModule loads internal/kernels' TypedPTX (axpy, add_vecs, add_bias
// and the globals bias and table), unloaded when the test ends.
func typedModule(t testing.TB, ctx *cuda.Context) *cuda.Module {
	t.Helper()
	mod, err := cuda.LoadModule(ctx, kernels.TypedPTX)
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := testenv.BoundedErr(t, "mod.Close", mod.Close); err != nil && !isClosed(err) {
			t.Errorf("closing the typed module: %v", err)
		}
	})
	return mod
}

func typedFunc(t testing.TB, mod *cuda.Module, name string) *cuda.Func {
	t.Helper()
	fn, err := mod.Func(name)
	testenv.Must(t, err)
	return fn
}

// A struct of three Slices and an int goes by value, laid out as C lays
// out struct Vecs { const float *a, *b; float *c; int n; } (32 bytes).
func TestLaunchStructOfThreeSlicesAndAnInt(t *testing.T) {
	f := newFixture(t)
	addVecs := typedFunc(t, typedModule(t, f.ctx), "add_vecs")
	if sizes, ok := addVecs.Params(); ok && !slices.Equal(sizes, []int{32}) {
		t.Fatalf("add_vecs's parameters: %v, want [32]", sizes)
	}
	a := alloc(t, f.s, []float32{1, 2, 3})
	b := alloc(t, f.s, []float32{10, 20, 30})
	c := alloc(t, f.s, []float32{0, 0, 0})
	g, bl := cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1)
	testenv.Must(t, f.s.Launch(addVecs, g, bl, cuda.Struct(a.Arg(), b.Arg(), c.Arg(), cuda.Int32(3))))
	if got := read(t, f.s, c); !slices.Equal(got, []float32{11, 22, 33}) {
		t.Errorf("got %v, want [11 22 33]", got)
	}
	// A sub-slice passes the address of its first element; a Slice may be
	// a field twice.
	a1, err := a.Slice(1, 3)
	testenv.Must(t, err)
	testenv.Must(t, f.s.Launch(addVecs, g, bl, cuda.Struct(a1.Arg(), a1.Arg(), c.Arg(), cuda.Int32(2))))
	if got := read(t, f.s, c); !slices.Equal(got, []float32{4, 6, 33}) {
		t.Errorf("got %v, want [4 6 33]", got)
	}
	for name, arg := range map[string]cuda.Arg{
		"24 bytes for 32":      cuda.Struct(a.Arg(), b.Arg(), c.Arg()),
		"40 bytes for 32":      cuda.Struct(a.Arg(), b.Arg(), c.Arg(), cuda.Int64(3), cuda.Int32(1)),
		"a Struct in a Struct": cuda.Struct(cuda.Struct(a.Arg()), b.Arg(), c.Arg(), cuda.Int32(3)),
		"an empty Struct":      cuda.Struct(),
		"a bad field":          cuda.Struct(cuda.Slice[float32]{}.Arg(), b.Arg(), c.Arg(), cuda.Int32(3)),
	} {
		err := f.s.Launch(addVecs, g, bl, arg)
		if !errors.Is(err, cuda.ErrArgs) && !errors.Is(err, cuda.ErrNil) {
			t.Errorf("%s: %v, want ErrArgs or ErrNil", name, err)
		}
	}
	// A Struct only goes where the kernel takes a class type.
	axpy := typedFunc(t, typedModule(t, f.ctx), "axpy")
	err = f.s.Launch(axpy, g, bl, cuda.Float32(1), cuda.Struct(a.Arg()), c.Arg(), cuda.Int32(3))
	if !errors.Is(err, cuda.ErrArgs) {
		t.Errorf("a Struct for const float*: %v, want ErrArgs", err)
	}
	// The layout: an int, then a pointer at 8, a short, a float at 20;
	// 24 bytes in all.
	if err := f.s.Launch(addVecs, g, bl, cuda.Struct(cuda.Int32(1), a.Arg(), cuda.Value(int16(2)), cuda.Float32(3))); !errors.Is(err, cuda.ErrArgs) {
		t.Errorf("24 bytes for 32: %v, want ErrArgs", err)
	}
	x := alloc(t, f.s, []float32{1})
	testenv.MustBounded(t, "x.Free", x.Free)
	if err := f.s.Launch(addVecs, g, bl, cuda.Struct(x.Arg(), b.Arg(), c.Arg(), cuda.Int32(1))); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("a Struct with a freed Slice: %v, want ErrFreed", err)
	}
	// b and c were released by the failed launch: they free.
	testenv.Must(t, f.s.Launch(addVecs, g, bl, cuda.Struct(b.Arg(), b.Arg(), c.Arg(), cuda.Int32(1))))
}

// The Slices in a Struct are uses of their memory: freed right after a
// launch that waits behind a 50 ms kernel, they are freed only after it,
// and memory allocated meanwhile (which might reuse theirs) does not
// change what the kernel reads.
func TestStructFieldsAreTrackedByFree(t *testing.T) {
	f := newFixture(t)
	addVecs := typedFunc(t, typedModule(t, f.ctx), "add_vecs")
	const n = 1024
	user := newStream(t, f.ctx, cuda.NonBlocking())
	a := alloc(t, f.s, seq(n, func(i int) float32 { return float32(i) }))
	b := alloc(t, f.s, seq(n, func(int) float32 { return 1 }))
	c := alloc(t, f.s, make([]float32, n))
	sync(t, f.s)
	testenv.Must(t, user.Launch(f.fn(t, "spin"), cuda.Grid(1, 1, 1), cuda.Block(1, 1, 1), cuda.Uint64(uint64(50*time.Millisecond))))
	testenv.Must(t, user.Launch(addVecs, cuda.Grid(n/256, 1, 1), cuda.Block(256, 1, 1), cuda.Struct(a.Arg(), b.Arg(), c.Arg(), cuda.Int32(n))))
	testenv.MustBounded(t, "a.Free", a.Free)
	testenv.MustBounded(t, "b.Free", b.Free)
	for range 4 {
		junk := alloc(t, f.s, make([]float32, n))
		testenv.Must(t, cuda.Memset(f.s, junk, -7))
	}
	got := read(t, user, c)
	for i, v := range got {
		if v != float32(i)+1 {
			t.Fatalf("c[%d] = %v, want %v: the kernel read freed memory", i, v, float32(i)+1)
		}
	}
	t.Logf("kernels-struct: add_vecs(Struct of 3 Slices and an int) behind a 50 ms kernel, its inputs freed at once and 4 allocations made meanwhile: %d sums right", n)
}

// axpy(float, const float*, float*, int): the const pointer counts as
// read-only, the other not; the types are checked.
func TestConstPointerParametersAreReadOnly(t *testing.T) {
	f := newFixture(t)
	axpy := typedFunc(t, typedModule(t, f.ctx), "axpy(float, const float*, float*, int)")
	for i, want := range []bool{false, true, false, false} {
		if got := cuda.ParamReadOnly(axpy, i); got != want {
			t.Errorf("axpy's parameter %d read-only: %v, want %v", i, got, want)
		}
	}
	x := alloc(t, f.s, []float32{1, 2})
	y := alloc(t, f.s, []float32{1, 1})
	xi := alloc(t, f.s, []int32{1, 2})
	g, b := cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1)
	if err := f.s.Launch(axpy, g, b, cuda.Float32(2), xi.Arg(), y.Arg(), cuda.Int32(2)); !errors.Is(err, cuda.ErrArgs) {
		t.Errorf("int32 memory for const float*: %v, want ErrArgs", err)
	}
	if err := f.s.Launch(axpy, g, b, cuda.Float32(2), x.Arg(), y.Arg(), cuda.Uint32(2)); !errors.Is(err, cuda.ErrArgs) {
		t.Errorf("Uint32 for int: %v, want ErrArgs", err)
	}
	testenv.Must(t, f.s.Launch(axpy, g, b, cuda.Float32(2), x.Arg(), y.Arg(), cuda.Int32(2)))
	if got := read(t, f.s, y); !slices.Equal(got, []float32{3, 5}) {
		t.Errorf("got %v, want [3 5]", got)
	}
}

// Global gives a module's __constant__ and __device__ variables as
// Slices: filled by a copy, read by a kernel, ended by Module.Close.
func TestModuleGlobal(t *testing.T) {
	f := newFixture(t)
	mod, err := cuda.LoadModule(f.ctx, kernels.TypedPTX)
	testenv.Must(t, err)
	bias, err := cuda.Global[float32](mod, "bias")
	testenv.Must(t, err)
	if bias.Len() != 1 {
		t.Fatalf("bias has %d elements, want 1", bias.Len())
	}
	testenv.Must(t, cuda.CopyToDevice(f.s, bias, []float32{0.5}))
	x := alloc(t, f.s, []float32{1, 2, 3})
	addBias, err := mod.Func("add_bias")
	testenv.Must(t, err)
	testenv.Must(t, f.s.Launch(addBias, cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), x.Arg(), cuda.Int32(3)))
	if got := read(t, f.s, x); !slices.Equal(got, []float32{1.5, 2.5, 3.5}) {
		t.Errorf("got %v, want [1.5 2.5 3.5]", got)
	}
	table, err := cuda.Global[float32](mod, "table")
	testenv.Must(t, err)
	if table.Len() != 16 {
		t.Errorf("table has %d elements, want 16", table.Len())
	}
	want := seq(16, func(i int) float32 { return float32(i * i) })
	testenv.Must(t, cuda.CopyToDevice(f.s, table, want))
	if got := read(t, f.s, table); !slices.Equal(got, want) {
		t.Errorf("table reads back %v, want %v", got, want)
	}
	if whole, err := cuda.Global[[16]float32](mod, "table"); err != nil || whole.Len() != 1 {
		t.Errorf("table as one [16]float32: %d elements, %v", whole.Len(), err)
	}
	if _, err := cuda.Global[[3]float32](mod, "table"); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("64 bytes as [3]float32: %v, want ErrLength", err)
	}
	if _, err := cuda.Global[float32](mod, "nothing"); !errors.Is(err, cuda.ErrNotFound) {
		t.Errorf("an unknown global: %v, want ErrNotFound", err)
	}
	if err := testenv.BoundedErr(t, "table.Free", table.Free); err == nil {
		t.Error("Free of a module's variable: no error")
	}
	testenv.MustBounded(t, "mod.Close", mod.Close)
	if err := testenv.BoundedErr(t, "cuda.CopyToDevice", func() error { return cuda.CopyToDevice(f.s, bias, []float32{1}) }); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("a copy into a global after Module.Close: %v, want ErrFreed", err)
	}
	if _, err := cuda.Global[float32](mod, "bias"); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Global after Module.Close: %v, want ErrClosed", err)
	}
}

// Making a Struct allocates its layout; launching one made before does
// not allocate.
func TestLaunchOfAStructAllocatesNothing(t *testing.T) {
	f := newFixture(t)
	addVecs := typedFunc(t, typedModule(t, f.ctx), "add_vecs")
	a := alloc(t, f.s, make([]float32, 256))
	arg := cuda.Struct(a.Arg(), a.Arg(), a.Arg(), cuda.Int32(256))
	g, b := cuda.Grid(1, 1, 1), cuda.Block(256, 1, 1)
	testenv.Must(t, f.s.Launch(addVecs, g, b, arg))
	var err error
	allocs := testing.AllocsPerRun(500, func() {
		if e := f.s.Launch(addVecs, g, b, arg); e != nil {
			err = e
		}
	})
	testenv.Must(t, err)
	sync(t, f.s)
	if allocs != 0 {
		t.Errorf("a launch of a Struct allocates %v times, want 0", allocs)
	}
}
