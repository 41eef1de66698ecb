package cuda_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
)

// launch1D launches fn over n elements with args.
func launch1D(t testing.TB, s *cuda.Stream, fn *cuda.Func, n int, args ...cuda.Arg) error {
	t.Helper()
	return s.Launch(fn, cuda.Grid((n+255)/256, 1, 1), cuda.Block(256, 1, 1), args...)
}

// An Alloc and a Free inside a capture become the graph's mem-alloc and
// mem-free nodes: the graph runs its kernels on the memory at every
// launch, and after the capture the Slice is freed.
func TestGraphAllocFreedInTheCapture(t *testing.T) {
	f := newFixture(t)
	fill, addOne := f.fn(t, "fill_i32"), f.fn(t, "add_one_i32")
	out := alloc(t, f.s, make([]int32, 8))
	var tmp cuda.Slice[int32]
	g, err := f.s.Capture(func(s *cuda.Stream) error {
		var err error
		if tmp, err = cuda.Alloc[int32](s, 8); err != nil {
			return err
		}
		if tmp.DevicePtr() == 0 {
			t.Error("a Slice allocated in a capture has no address")
		}
		if err := launch1D(t, s, fill, 8, tmp.Arg(), cuda.Uint64(8), cuda.Int32(41)); err != nil {
			return err
		}
		if err := launch1D(t, s, addOne, 8, tmp.Arg(), cuda.Uint64(8)); err != nil {
			return err
		}
		if err := cuda.Copy(s, out, tmp); err != nil {
			return err
		}
		return tmp.Free()
	})
	testenv.Must(t, err)
	defer func() { testenv.Must(t, g.Destroy()) }()
	if n, err := g.Nodes(); err != nil || n != 5 {
		t.Errorf("the graph has %d nodes (%v), want 5: alloc, two kernels, copy, free", n, err)
	}
	if err := cuda.Memset(f.s, tmp, 0); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("a use after the capture of a Slice freed in it: %v, want ErrFreed", err)
	}
	x, err := g.Instantiate()
	testenv.Must(t, err)
	defer func() { testenv.Must(t, x.Destroy()) }()
	for i := range 20 {
		testenv.Must(t, cuda.Memset(f.s, out, 0))
		testenv.Must(t, f.s.LaunchGraph(x))
		if got := read(t, f.s, out); !slices.Equal(got, slices.Repeat([]int32{42}, 8)) {
			t.Fatalf("launch %d: %v, want 42s", i, got)
		}
	}
}

// captureOutliving captures a graph that allocates y, copies in into it
// and adds one: y outlives the capture. The graph is destroyed when the
// test ends, unless the test did.
func captureOutliving(t *testing.T, f *fixture, in cuda.Slice[int32]) (*cuda.Graph, cuda.Slice[int32]) {
	t.Helper()
	var y cuda.Slice[int32]
	g, err := f.s.Capture(func(s *cuda.Stream) error {
		var err error
		if y, err = cuda.Alloc[int32](s, in.Len()); err != nil {
			return err
		}
		if err := cuda.Copy(s, y, in); err != nil {
			return err
		}
		return launch1D(t, s, f.fn(t, "add_one_i32"), in.Len(), y.Arg(), cuda.Uint64(uint64(in.Len())))
	})
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := g.Destroy(); err != nil && !errors.Is(err, graph.ErrDestroyed) {
			t.Error(err)
		}
	})
	return g, y
}

// A Slice allocated in a capture and not freed there outlives the launch:
// the program reads it after the launch, on the launch's stream and on
// another, and frees it. Until then the driver refuses to launch the graph
// again.
func TestGraphAllocOutlivingTheLaunch(t *testing.T) {
	f := newFixture(t)
	other := newStream(t, f.ctx, cuda.NonBlocking())
	in := alloc(t, f.s, []int32{1, 2, 3, 4})
	g, y := captureOutliving(t, f, in)
	addr := y.DevicePtr()
	x, err := g.Instantiate()
	testenv.Must(t, err)
	defer func() { testenv.Must(t, x.Destroy()) }()
	testenv.Must(t, f.s.LaunchGraph(x))
	if got := read(t, f.s, y); !slices.Equal(got, []int32{2, 3, 4, 5}) {
		t.Errorf("after the launch the Slice holds %v, want [2 3 4 5]", got)
	}
	// Another stream's read is ordered after the launch.
	got := make([]int32, 4)
	testenv.Must(t, cuda.CopyToHost(other, got, y))
	if !slices.Equal(got, []int32{2, 3, 4, 5}) {
		t.Errorf("another stream read %v, want [2 3 4 5]", got)
	}
	if err := f.s.LaunchGraph(x); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("a second launch before the Free: %v, want an error matching ErrInvalidValue", err)
	}
	if y.DevicePtr() != addr {
		t.Errorf("the Slice moved from %#x to %#x", addr, y.DevicePtr())
	}
	testenv.Must(t, y.Free())
	sync(t, f.s)
	sync(t, other)
}

// An executable graph made with InstantiateAutoFree launches again while
// its allocation is live: each launch allocates it at the same address,
// and the Slice shows each launch's result; the program frees it after
// the last.
func TestGraphAllocAutoFreeRelaunches(t *testing.T) {
	f := newFixture(t)
	in := alloc(t, f.s, []int32{10, 20, 30})
	g, y := captureOutliving(t, f, in)
	addr := y.DevicePtr()
	x, err := g.InstantiateAutoFree()
	testenv.Must(t, err)
	defer func() { testenv.Must(t, x.Destroy()) }()
	for i := range int32(10) {
		testenv.Must(t, cuda.CopyToDevice(f.s, in, []int32{i, 2 * i, 3 * i}))
		testenv.Must(t, f.s.LaunchGraph(x))
		if got, want := read(t, f.s, y), []int32{i + 1, 2*i + 1, 3*i + 1}; !slices.Equal(got, want) {
			t.Fatalf("launch %d: the Slice holds %v, want %v", i, got, want)
		}
		if y.DevicePtr() != addr {
			t.Fatalf("launch %d: the Slice at %#x, want %#x", i, y.DevicePtr(), addr)
		}
	}
	testenv.Must(t, y.Free())
	sync(t, f.s)
}

// A Slice allocated in a capture whose graph is never launched has no
// memory: its Free frees nothing and succeeds; AllocFrom in a capture is
// refused.
func TestGraphAllocNeverLaunched(t *testing.T) {
	f := newFixture(t)
	pool, err := f.ctx.MemPool()
	testenv.Must(t, err)
	in := alloc(t, f.s, []int32{1})
	g, y := captureOutliving(t, f, in)
	_ = g
	testenv.Must(t, y.Free())
	if err := y.Free(); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("a second Free: %v, want ErrFreed", err)
	}
	_, err = f.s.Capture(func(s *cuda.Stream) error {
		_, err := cuda.AllocFrom[int32](pool, s, 4)
		return err
	})
	if !errors.Is(err, cuda.ErrCapturing) {
		t.Errorf("AllocFrom in a capture: %v, want ErrCapturing", err)
	}
}

// The device's graph memory figures follow a graph allocation: used while
// it is live, reserved at least as much; the high-water marks reset; a
// trim after the allocation is freed and the graph destroyed gives back
// what was reserved (no more than before stays).
func TestGraphMemFiguresAndTrim(t *testing.T) {
	f := newFixture(t)
	dev := f.ctx.Device()
	const n = 1 << 18 // 1 MiB of int32
	in := alloc(t, f.s, make([]int32, n))
	var y cuda.Slice[int32]
	g, err := f.s.Capture(func(s *cuda.Stream) error {
		var err error
		if y, err = cuda.Alloc[int32](s, n); err != nil {
			return err
		}
		return cuda.Copy(s, y, in)
	})
	testenv.Must(t, err)
	x, err := g.Instantiate()
	testenv.Must(t, err)
	testenv.Must(t, f.s.LaunchGraph(x))
	sync(t, f.s)
	live, err := dev.GraphMem()
	testenv.Must(t, err)
	if live.Used < 4*n || live.Reserved < live.Used || live.UsedHigh < live.Used || live.ReservedHigh < live.Reserved {
		t.Errorf("with %d bytes of graph memory live: %+v", 4*n, live)
	}
	testenv.Must(t, y.Free())
	sync(t, f.s)
	testenv.Must(t, x.Destroy())
	testenv.Must(t, g.Destroy())
	testenv.Must(t, dev.GraphMemTrim())
	trimmed, err := dev.GraphMem()
	testenv.Must(t, err)
	if trimmed.Used >= live.Used || trimmed.Reserved >= live.Reserved {
		t.Errorf("after the free and a trim: %+v, from %+v", trimmed, live)
	}
	testenv.Must(t, dev.ResetGraphMemHigh())
	reset, err := dev.GraphMem()
	testenv.Must(t, err)
	if reset.ReservedHigh >= live.ReservedHigh || reset.UsedHigh >= live.UsedHigh {
		t.Errorf("after ResetGraphMemHigh: %+v, from %+v", reset, live)
	}
}

// RunCached with an Alloc and a Free in its function: each run's capture
// allocates in its graph, and each run computes the right result (the
// executable graph is made again when its memory nodes moved).
func TestRunCachedWithGraphAllocations(t *testing.T) {
	f := newFixture(t)
	addOne := f.fn(t, "add_one_i32")
	in := alloc(t, f.s, []int32{1, 2, 3})
	out := alloc(t, f.s, make([]int32, 3))
	c := cuda.NewCached(cuda.DefaultCaptureMode)
	defer func() { testenv.Must(t, c.Close()) }()
	for i := range int32(4) {
		testenv.Must(t, cuda.CopyToDevice(f.s, in, []int32{i, i + 1, i + 2}))
		err := f.s.RunCached(c, func(s *cuda.Stream) error {
			tmp, err := cuda.Alloc[int32](s, 3)
			if err != nil {
				return err
			}
			if err := cuda.Copy(s, tmp, in); err != nil {
				return err
			}
			if err := launch1D(t, s, addOne, 3, tmp.Arg(), cuda.Uint64(3)); err != nil {
				return err
			}
			if err := cuda.Copy(s, out, tmp); err != nil {
				return err
			}
			return tmp.Free()
		})
		testenv.Must(t, err)
		if got, want := read(t, f.s, out), []int32{i + 1, i + 2, i + 3}; !slices.Equal(got, want) {
			t.Fatalf("run %d: %v, want %v", i, got, want)
		}
	}
}
