package cuda_test

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

func TestLaunchSaxpy(t *testing.T) {
	f := newFixture(t)
	const n = 1000
	x := alloc(t, f.s, seq(n, func(i int) float32 { return float32(i) }))
	y := alloc(t, f.s, seq(n, func(int) float32 { return 1 }))
	saxpy := f.fn(t, "saxpy")
	testenv.Must(t, f.s.Launch(saxpy, cuda.Grid((n+127)/128, 1, 1), cuda.Block(128, 1, 1),
		cuda.Int32(n), cuda.Float32(3), x.Arg(), y.Arg()))
	got := read(t, f.s, y)
	for i, v := range got {
		if v != 3*float32(i)+1 {
			t.Fatalf("y[%d] = %v, want %v", i, v, 3*float32(i)+1)
		}
	}
}

// A launch with a sub-slice passes the address of its first element.
func TestLaunchOnASubslice(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, []float32{1, 1, 1, 1, 1, 1})
	y := alloc(t, f.s, []float32{0, 0, 0, 0, 0, 0})
	ys, err := y.Slice(2, 5)
	testenv.Must(t, err)
	xs, err := x.Slice(0, 3)
	testenv.Must(t, err)
	testenv.Must(t, f.s.Launch(f.fn(t, "saxpy"), cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1),
		cuda.Int32(3), cuda.Float32(2), xs.Arg(), ys.Arg()))
	if got := read(t, f.s, y); !slices.Equal(got, []float32{0, 0, 2, 2, 2, 0}) {
		t.Errorf("got %v", got)
	}
}

func TestLaunchChecksArguments(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, make([]float32, 4))
	saxpy := f.fn(t, "saxpy")
	sizes, ok := saxpy.Params()
	if !ok || !slices.Equal(sizes, []int{4, 4, 8, 8}) {
		t.Fatalf("saxpy's parameters: %v %v, want [4 4 8 8]", sizes, ok)
	}
	g, b := cuda.Grid(1, 1, 1), cuda.Block(4, 1, 1)
	type withPtr struct{ P *int }
	for name, args := range map[string][]cuda.Arg{
		"too few":          {cuda.Int32(4), cuda.Float32(1), x.Arg()},
		"too many":         {cuda.Int32(4), cuda.Float32(1), x.Arg(), x.Arg(), x.Arg()},
		"int64 for int":    {cuda.Int64(4), cuda.Float32(1), x.Arg(), x.Arg()},
		"double for float": {cuda.Int32(4), cuda.Float64(1), x.Arg(), x.Arg()},
		"float for ptr":    {cuda.Int32(4), cuda.Float32(1), cuda.Float32(0), x.Arg()},
		"none":             nil,
	} {
		if err := f.s.Launch(saxpy, g, b, args...); !errors.Is(err, cuda.ErrArgs) {
			t.Errorf("%s: %v, want ErrArgs", name, err)
		}
	}
	if err := f.s.Launch(saxpy, g, b, cuda.Int32(4), cuda.Float32(1), cuda.Value(withPtr{}), x.Arg()); !errors.Is(err, cuda.ErrElemType) {
		t.Errorf("a value with a pointer: %v, want ErrElemType", err)
	}
	if err := f.s.Launch(saxpy, cuda.Grid(-1, 1, 1), b, cuda.Int32(4), cuda.Float32(1), x.Arg(), x.Arg()); err == nil {
		t.Error("a negative grid: no error")
	}
	if err := f.s.Launch(nil, g, b); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("nil Func: %v, want ErrNil", err)
	}
	// The checks came before the driver: the Slice was not touched, and
	// works.
	testenv.Must(t, f.s.Launch(saxpy, g, b, cuda.Int32(4), cuda.Value(float32(1)), x.Arg(), x.Arg()))
}

// Values of any pointer-free type go by value: here a uint64 (through
// Value) and a 4-byte struct for a float parameter.
func TestLaunchValueArguments(t *testing.T) {
	f := newFixture(t)
	data := alloc(t, f.s, []int32{1, 2, 3})
	type wrapped struct{ V int32 }
	testenv.Must(t, f.s.Launch(f.fn(t, "fill_i32"), cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1),
		data.Arg(), cuda.Value(uint64(2)), cuda.Value(wrapped{7})))
	if got := read(t, f.s, data); !slices.Equal(got, []int32{7, 7, 3}) {
		t.Errorf("got %v", got)
	}
	big := cuda.Value([5]float64{1, 2, 3, 4, 5})
	if err := f.s.Launch(f.fn(t, "spin"), cuda.Grid(1, 1, 1), cuda.Block(1, 1, 1), big); !errors.Is(err, cuda.ErrArgs) {
		t.Errorf("a 40-byte value for an 8-byte parameter: %v, want ErrArgs", err)
	}
}

// A kernel can work on pinned host memory directly; the launch is a use
// of the buffer, so Free waits for it.
func TestLaunchOnPinnedMemory(t *testing.T) {
	f := newFixture(t)
	p, err := cuda.AllocPinned[int32](f.ctx, 8)
	testenv.Must(t, err)
	testenv.Must(t, f.s.Launch(f.fn(t, "fill_i32"), cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1),
		p.Arg(), cuda.Uint64(8), cuda.Int32(5)))
	testenv.MustBounded(t, "p.Free", p.Free)
	testenv.MustBounded(t, "hostmem.Wait", func() error { return hostmem.Wait(testenv.Context(t)) })
	for i, v := range p.Data() {
		if v != 5 {
			t.Fatalf("data[%d] = %d", i, v)
		}
	}
	err = f.s.Launch(f.fn(t, "fill_i32"), cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), p.Arg(), cuda.Uint64(8), cuda.Int32(5))
	if !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("launch on freed pinned memory: %v, want ErrFreed", err)
	}
}

// Cooperative and cluster launches go through cuLaunchKernelEx.
func TestLaunchWithOptions(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, []float32{1, 2})
	y := alloc(t, f.s, []float32{0, 0})
	saxpy := f.fn(t, "saxpy")
	testenv.Must(t, f.s.LaunchWith(saxpy, cuda.Config{Grid: cuda.Grid(1, 1, 1), Block: cuda.Block(32, 1, 1), Cooperative: true},
		cuda.Int32(2), cuda.Float32(1), x.Arg(), y.Arg()))
	major, _, err := f.ctx.Device().ComputeCapability()
	testenv.Must(t, err)
	err = f.s.LaunchWith(saxpy, cuda.Config{Grid: cuda.Grid(2, 1, 1), Block: cuda.Block(32, 1, 1), Cluster: cuda.Dim3{X: 2}},
		cuda.Int32(2), cuda.Float32(1), x.Arg(), y.Arg())
	want := []float32{2, 4}
	switch {
	case major >= 9:
		testenv.Must(t, err) // thread block clusters need compute capability 9.0
	case err == nil:
		t.Errorf("a cluster launch on compute capability %d succeeded", major)
	default:
		want = []float32{1, 2}
	}
	if got := read(t, f.s, y); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestLaunchAfterCloseIsAnError(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, make([]float32, 2))
	saxpy := f.fn(t, "saxpy")
	s2 := newStream(t, f.ctx)
	testenv.MustBounded(t, "s2.Close", s2.Close)
	args := []cuda.Arg{cuda.Int32(2), cuda.Float32(1), x.Arg(), x.Arg()}
	if err := testenv.BoundedErr(t, "s2.Launch", func() error { return s2.Launch(saxpy, cuda.Grid(1, 1, 1), cuda.Block(2, 1, 1), args...) }); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("launch on a closed stream: %v, want ErrClosed", err)
	}
	mod2, err := cuda.LoadModule(f.ctx, kernelsPTX())
	testenv.Must(t, err)
	saxpy2, err := mod2.Func("saxpy")
	testenv.Must(t, err)
	testenv.MustBounded(t, "mod2.Close", mod2.Close)
	if err := testenv.BoundedErr(t, "f.s.Launch", func() error { return f.s.Launch(saxpy2, cuda.Grid(1, 1, 1), cuda.Block(2, 1, 1), args...) }); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("launch of a Func of a closed module: %v, want ErrClosed", err)
	}
	if _, err := mod2.Func("saxpy"); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Func of a closed module: %v, want ErrClosed", err)
	}
	if err := testenv.BoundedErr(t, "mod2.Close", mod2.Close); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
}

// saxpyArgs builds the benchmark's launch: two Slices and two scalars.
func saxpyLaunch(tb testing.TB, f *fixture, n int) func() error {
	x := alloc(tb, f.s, make([]float32, n))
	y := alloc(tb, f.s, make([]float32, n))
	saxpy := f.fn(tb, "saxpy")
	g, b := cuda.Grid((n+255)/256, 1, 1), cuda.Block(256, 1, 1)
	return func() error {
		return f.s.Launch(saxpy, g, b, cuda.Int32(int32(n)), cuda.Float32(2), x.Arg(), y.Arg())
	}
}

// A launch allocates nothing, checked by size (extern "C" saxpy) or by
// type (the C++ scale<float>).
func TestLaunchAllocatesNothing(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, make([]float32, 1024))
	scale := f.fn(t, "scale<float>")
	for name, launch := range map[string]func() error{
		"saxpy": saxpyLaunch(t, f, 1024),
		"scale<float>": func() error {
			return f.s.Launch(scale, cuda.Grid(4, 1, 1), cuda.Block(256, 1, 1), x.Arg(), cuda.Float32(1), cuda.Uint64(1024))
		},
	} {
		testenv.Must(t, launch()) // the first use records the stream
		var err error
		allocs := testing.AllocsPerRun(1000, func() {
			if e := launch(); e != nil {
				err = e
			}
		})
		testenv.Must(t, err)
		sync(t, f.s)
		if allocs != 0 {
			t.Errorf("%s: a launch allocates %v times, want 0", name, allocs)
		}
	}
}

// A C++ kernel's arguments are checked against the parameter types of its
// mangled name, not only their sizes; the error names the parameter, its
// C++ type and the Go argument.
func TestLaunchChecksTypesOfCPlusPlusKernels(t *testing.T) {
	f := newFixture(t)
	xf := alloc(t, f.s, []float32{1, 2})
	xi := alloc(t, f.s, []int32{1, 2})
	scale := f.fn(t, "scale<float>") // (float*, float, unsigned long long)
	g, b := cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1)
	type pair struct{ A, B uint32 }
	for _, c := range []struct {
		name string
		args []cuda.Arg
		want string // in the error
	}{
		{"int32 memory for float*", []cuda.Arg{xi.Arg(), cuda.Float32(2), cuda.Uint64(2)}, "argument 0 is memory of int32 elements (Slice.Arg, Pinned.Arg), its parameter 0 is float*"},
		{"Int32 for float", []cuda.Arg{xf.Arg(), cuda.Int32(2), cuda.Uint64(2)}, "argument 1 is an int32 (Int32 or Value), its parameter 1 is float"},
		{"Uint32 for float", []cuda.Arg{xf.Arg(), cuda.Uint32(2), cuda.Uint64(2)}, "parameter 1 is float"},
		{"Int64 for unsigned long long", []cuda.Arg{xf.Arg(), cuda.Float32(2), cuda.Int64(2)}, "argument 2 is an int64 (Int64 or Value), its parameter 2 is unsigned long long"},
		{"Float64 for unsigned long long", []cuda.Arg{xf.Arg(), cuda.Float32(2), cuda.Float64(2)}, "parameter 2 is unsigned long long"},
		{"a struct for float*", []cuda.Arg{cuda.Value(pair{}), cuda.Float32(2), cuda.Uint64(2)}, "argument 0 is a struct or array Value, its parameter 0 is float*"},
		{"Uint64 for float*", []cuda.Arg{cuda.Uint64(uint64(xf.DevicePtr())), cuda.Float32(2), cuda.Uint64(2)}, "parameter 0 is float*"},
	} {
		err := f.s.Launch(scale, g, b, c.args...)
		if !errors.Is(err, cuda.ErrArgs) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrArgs saying %q", c.name, err, c.want)
		}
	}
	// What the types allow: a float32 Slice, Ptr or a float32 Value for
	// the pointer and the float, Value[uint64] for the size.
	testenv.Must(t, f.s.Launch(scale, g, b, xf.Arg(), cuda.Float32(2), cuda.Uint64(2)))
	testenv.Must(t, f.s.Launch(scale, g, b, cuda.Ptr(xf.DevicePtr()), cuda.Value(float32(3)), cuda.Value(uint64(2))))
	if got := read(t, f.s, xf); !slices.Equal(got, []float32{6, 12}) {
		t.Errorf("got %v, want [6 12]", got)
	}
	// The int instance takes an int32 Slice and an Int32.
	testenv.Must(t, f.s.Launch(f.fn(t, "scale<int>"), g, b, xi.Arg(), cuda.Int32(5), cuda.Uint64(2)))
	if got := read(t, f.s, xi); !slices.Equal(got, []int32{5, 10}) {
		t.Errorf("got %v, want [5 10]", got)
	}
}

// An extern "C" kernel's name carries no types: its arguments are checked
// by size alone, so a Uint32 passes for saxpy's int n.
func TestLaunchChecksExternCKernelsBySize(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, []float32{1, 2})
	y := alloc(t, f.s, []float32{1, 1})
	saxpy := f.fn(t, "saxpy")
	testenv.Must(t, f.s.Launch(saxpy, cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), cuda.Uint32(2), cuda.Float32(2), x.Arg(), y.Arg()))
	if got := read(t, f.s, y); !slices.Equal(got, []float32{3, 5}) {
		t.Errorf("got %v, want [3 5]", got)
	}
	for i := range 4 {
		if cuda.ParamReadOnly(saxpy, i) {
			t.Errorf("saxpy's parameter %d counts as read-only: an extern \"C\" name says nothing of const", i)
		}
	}
}

// BenchmarkLaunch compares a saxpy launch through package cuda (two
// Slice[float32] and two scalars, checked) with the same launch through
// libcuda.LaunchKernel. The kernel is one block, so that the launch calls,
// not the GPU, set the pace; the stream is synchronised every 256
// launches on both sides.
func BenchmarkLaunch(b *testing.B) {
	const n = 256
	b.Run("cuda", func(b *testing.B) {
		f := newFixture(b)
		launch := saxpyLaunch(b, f, n)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := launch(); err != nil {
				b.Fatal(err)
			}
			if i%256 == 255 {
				sync(b, f.s)
			}
		}
		sync(b, f.s)
	})
	b.Run("libcuda", func(b *testing.B) {
		f := newFixture(b)
		x := alloc(b, f.s, make([]float32, n))
		y := alloc(b, f.s, make([]float32, n))
		saxpy := f.fn(b, "saxpy").Raw()
		raw := f.s.Raw()
		nn, a, px, py := int32(n), float32(2), x.DevicePtr(), y.DevicePtr()
		params := [4]unsafePointer{ptr(&nn), ptr(&a), ptr(&px), ptr(&py)}
		testenv.Must(b, f.ctx.Do(func() error {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := libcuda.LaunchKernel(saxpy, (n+255)/256, 1, 1, 256, 1, 1, 0, raw, &params[0], nil); err != nil {
					return err
				}
				if i%256 == 255 {
					sync(b, f.s)
				}
			}
			return nil
		}))
		sync(b, f.s)
	})
}

// Copies and memsets of Slices allocate nothing either.
func TestCopiesAllocateNothing(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, make([]float32, 64))
	y := alloc(t, f.s, make([]float32, 64))
	host := make([]float32, 64)
	var err error
	keep := func(e error) {
		if e != nil {
			err = e
		}
	}
	// Pinned memory in the index: a []T is looked up on each copy.
	pin, err := cuda.AllocPinned[float32](f.ctx, 128)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "pin.Free", pin.Free)
	view, err := pin.Slice(64, 128)
	testenv.Must(t, err)
	for name, op := range map[string]func(){
		"CopyToDevice":                  func() { keep(cuda.CopyToDevice(f.s, x, host)) },
		"Copy":                          func() { keep(cuda.Copy(f.s, y, x)) },
		"Memset":                        func() { keep(cuda.Memset(f.s, x, 2)) },
		"CopyToDevice from a Pinned":    func() { keep(cuda.CopyToDevice(f.s, x, view)) },
		"CopyToHost into a Pinned":      func() { keep(cuda.CopyToHost(f.s, view, x)) },
		"CopyToHost into pinned Data()": func() { keep(cuda.CopyToHost(f.s, pin.Data()[:64], x)) },
	} {
		op()
		if allocs := testing.AllocsPerRun(200, op); allocs != 0 {
			t.Errorf("%s allocates %v times, want 0", name, allocs)
		}
		testenv.Must(t, err)
	}
	sync(t, f.s)
}

// FuzzLaunchArgs launches saxpy with argument lists made from the input:
// a launch succeeds exactly when the sizes match the parameters (4, 4, 8,
// 8 bytes). The only 8-byte argument is a Slice and the 4-byte ones are
// small, so that a launch that passes the check stays inside the Slice.
func FuzzLaunchArgs(f *testing.F) {
	f.Add([]byte{0, 1, 2, 2})
	f.Add([]byte{2, 3, 4})
	f.Add([]byte{})
	f.Add([]byte{5, 5, 5, 5, 5, 5})
	fx := newFixture(f)
	x := alloc(f, fx.s, make([]float32, 8))
	saxpy := fx.fn(f, "saxpy")
	f.Fuzz(func(t *testing.T, kinds []byte) {
		if len(kinds) > 80 {
			kinds = kinds[:80]
		}
		args := make([]cuda.Arg, len(kinds))
		sizes := make([]int, len(kinds))
		for i, k := range kinds {
			switch k % 6 {
			case 0:
				args[i], sizes[i] = cuda.Int32(int32(k%9)), 4 // at most the Slice's length
			case 1:
				args[i], sizes[i] = cuda.Float32(0), 4
			case 2:
				args[i], sizes[i] = x.Arg(), 8
			case 3:
				args[i], sizes[i] = cuda.Value([3]uint16{1, 2, 3}), 6
			case 4:
				args[i], sizes[i] = cuda.Value([40]byte{}), 40
			case 5:
				args[i], sizes[i] = cuda.Value(uint8(1)), 1
			}
		}
		match := slices.Equal(sizes, []int{4, 4, 8, 8})
		err := fx.s.Launch(saxpy, cuda.Grid(1, 1, 1), cuda.Block(8, 1, 1), args...)
		if match && err != nil {
			t.Errorf("matching arguments %v: %v", kinds, err)
		}
		if !match && !errors.Is(err, cuda.ErrArgs) {
			t.Errorf("arguments %v: %v, want ErrArgs", kinds, err)
		}
	})
}

// A launch on a Stream leaves the calling thread's current context alone:
// it runs in the stream's context (DESIGN.md, driver facts), so it needs
// neither cuCtxGetCurrent nor cuCtxSetCurrent. A thread with no context
// current still has none after the launch (before, the launch made the
// stream's context current and left it so).
func TestLaunchNeedsNoCurrentContext(t *testing.T) {
	f := newFixture(t)
	launch := saxpyLaunch(t, f, 256)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var prev libcuda.Context
	testenv.Must(t, libcuda.CtxGetCurrent(&prev))
	testenv.Must(t, libcuda.CtxSetCurrent(0))
	defer testenv.RestoreCurrent(t, prev)
	testenv.Must(t, launch())
	var cur libcuda.Context
	testenv.Must(t, libcuda.CtxGetCurrent(&cur))
	if cur != 0 {
		t.Errorf("after a launch the thread's current context is %#x, want none: the launch made a context current", cur)
	}
	sync(t, f.s)
}
