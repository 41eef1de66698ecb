//go:build !gpu

package cuda_test

import (
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// The simulator's graph memory figures, exactly: the bytes of the live
// allocation are used, a 2 MiB chunk reserved; after Free nothing is used
// and the chunk stays until GraphMemTrim; ResetGraphMemHigh brings the
// high-water marks down to the figures; the allocation's address is given
// back once the graph and its executable graph are destroyed.
func TestGraphMemFiguresOfTheSimulator(t *testing.T) {
	f := newFixture(t)
	dev := f.ctx.Device()
	base := testenv.SimStat(t, "live_graph_allocations")
	trims := testenv.SimStat(t, "graph_mem_trims")
	in := alloc(t, f.s, make([]int32, 1000))
	g, y := captureOutliving(t, f, in)
	if n := testenv.SimStat(t, "live_graph_allocations"); n != base+1 {
		t.Errorf("%d graph allocations after the capture, want %d", n, base+1)
	}
	x, err := g.Instantiate()
	testenv.Must(t, err)
	testenv.Must(t, f.s.LaunchGraph(x))
	sync(t, f.s)
	gm, err := dev.GraphMem()
	testenv.Must(t, err)
	if want := (cuda.GraphMemStats{Used: 4000, UsedHigh: 4000, Reserved: 2 << 20, ReservedHigh: 2 << 20}); gm != want {
		t.Errorf("live: %+v, want %+v", gm, want)
	}
	testenv.Must(t, y.Free())
	sync(t, f.s)
	gm, err = dev.GraphMem()
	testenv.Must(t, err)
	if want := (cuda.GraphMemStats{Used: 0, UsedHigh: 4000, Reserved: 2 << 20, ReservedHigh: 2 << 20}); gm != want {
		t.Errorf("freed: %+v, want %+v", gm, want)
	}
	testenv.Must(t, dev.GraphMemTrim())
	testenv.Must(t, dev.ResetGraphMemHigh())
	gm, err = dev.GraphMem()
	testenv.Must(t, err)
	if (gm != cuda.GraphMemStats{}) {
		t.Errorf("trimmed and reset: %+v, want zeros", gm)
	}
	if n := testenv.SimStat(t, "graph_mem_trims") - trims; n != 1 {
		t.Errorf("%d cuDeviceGraphMemTrim calls, want 1", n)
	}
	testenv.Must(t, x.Destroy())
	testenv.Must(t, g.Destroy())
	if n := testenv.SimStat(t, "live_graph_allocations"); n != base {
		t.Errorf("%d graph allocations after the graphs are destroyed, want %d", n, base)
	}
}

// A launch on another stream counts as a use of an outliving graph
// allocation: its Free, on the allocating stream, waits for the held
// launch, so that the launch's allocation is the one freed (else the free
// would run first, on nothing, and the launch's allocation stay).
func TestGraphAllocFreeWaitsForTheLaunchOnAnotherStream(t *testing.T) {
	testenv.OnPrimary(t, 0) // for the gate
	f := newFixture(t)
	other := newStream(t, f.ctx, cuda.NonBlocking())
	dev := f.ctx.Device()
	in := alloc(t, f.s, []int32{5, 6})
	g, y := captureOutliving(t, f, in)
	x, err := g.Instantiate()
	testenv.Must(t, err)
	defer func() { testenv.Must(t, x.Destroy()) }()
	gate := testenv.NewGate(t)
	gate.Hold(t, other.Raw())
	testenv.Must(t, other.LaunchGraph(x))
	testenv.Must(t, y.Free())
	gate.Open()
	sync(t, other)
	sync(t, f.s)
	testenv.Eventually(t, "the graph allocation to be freed", func() bool {
		gm, err := dev.GraphMem()
		return err == nil && gm.Used == 0
	})
}

// A Slice allocated in a capture, used on a stream that joined it, and
// freed before the join: the free node follows the joined stream's use,
// and the graph computes the right result at each launch.
func TestGraphAllocFreedAfterAUseOnAJoinedStream(t *testing.T) {
	f := newFixture(t)
	joined := newStream(t, f.ctx, cuda.NonBlocking())
	addOne := f.fn(t, "add_one_i32")
	out := alloc(t, f.s, make([]int32, 4))
	g, err := f.s.Capture(func(s *cuda.Stream) error {
		y, err := cuda.Alloc[int32](s, 4)
		if err != nil {
			return err
		}
		if err := cuda.Memset(s, y, 1); err != nil {
			return err
		}
		fork, err := s.Record()
		if err != nil {
			return err
		}
		defer fork.Close()
		if err := joined.Wait(fork); err != nil {
			return err
		}
		if err := launch1D(t, joined, addOne, 4, y.Arg(), cuda.Uint64(4)); err != nil {
			return err
		}
		if err := cuda.Copy(joined, out, y); err != nil {
			return err
		}
		if err := y.Free(); err != nil { // waits for joined's work in the graph
			return err
		}
		join, err := joined.Record()
		if err != nil {
			return err
		}
		defer join.Close()
		return s.Wait(join)
	})
	testenv.Must(t, err)
	defer func() { testenv.Must(t, g.Destroy()) }()
	x, err := g.Instantiate()
	testenv.Must(t, err)
	defer func() { testenv.Must(t, x.Destroy()) }()
	for range 3 {
		testenv.Must(t, cuda.Zero(f.s, out))
		testenv.Must(t, f.s.LaunchGraph(x))
		if got := read(t, f.s, out); !slices.Equal(got, []int32{2, 2, 2, 2}) {
			t.Fatalf("the graph computed %v, want 2s", got)
		}
	}
}
