//go:build !gpu && (linux || windows)

package graph_test

import (
	"strings"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// An update that succeeds but cannot create the event that tracks the
// launches (the executable graph then keeps its leases for good) is no
// failed update: Cached.Run launches the updated graph, says so in the
// log, and later runs go on as usual. The run before is held behind a
// gate, so that the update cannot reuse the event of its launch and must
// make one.
func TestCachedRunLaunchesAnUpdateWhoseTrackingFailed(t *testing.T) {
	errs := testenv.CaptureErrors(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	s := testenv.NewStream(t)
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	gt := testenv.NewGate(t)
	var first counter
	c := graph.NewCached(graph.DefaultMode)
	run := func(v int32, release func()) error {
		return c.Run(s, func(s libcuda.Stream) error {
			if !graph.Lease(s, release) {
				t.Error("Lease refused on the capturing stream")
			}
			return k.fillAdd(s, buf, n, v, 0)
		})
	}
	gt.Hold(t, s)
	testenv.Must(t, run(1, first.release)) // held: its launch has not finished at the next update
	created := testenv.SimStat(t, "live_events")
	testenv.SimFailNext(t, "cuEventCreate", 1, libcuda.CUDA_ERROR_OUT_OF_MEMORY)
	if err := run(2, func() {}); err != nil {
		t.Fatalf("Run whose update could not track its launches = %v, want nil", err)
	}
	if got := testenv.SimStat(t, "live_events"); got != created {
		t.Fatalf("live events: %d before the update, %d after; want no new one", created, got)
	}
	if first.get() != 0 {
		t.Fatal("the held run's lease was released before its launch finished")
	}
	gt.Open()
	checkInts(t, "after the untracked update", s, buf, host, 2)
	if got, want := c.Stats(), (graph.CacheStats{Runs: 2, Updates: 1, Instantiations: 1}); got != want {
		t.Fatalf("Stats() = %+v, want %+v", got, want)
	}
	msgs := errs.Messages()
	if len(msgs) != 1 || !strings.Contains(msgs[0], "kept for good") || !strings.Contains(msgs[0], "CUDA_ERROR_OUT_OF_MEMORY") ||
		!strings.Contains(msgs[0], "cuEventCreate") {
		t.Fatalf("logged %q, want one message that the leases are kept for good, with the error and its call", msgs)
	}
	// The launch before the update was tracked still: its lease goes.
	drained(t)
	if first.get() != 1 {
		t.Fatalf("the lease of the run before the untracked update was released %d times, want once", first.get())
	}
	testenv.Must(t, run(3, func() {}))
	checkInts(t, "after a later run", s, buf, host, 3)
	testenv.MustBounded(t, "c.Close", c.Close)
}

// In a loop that waits for each run, the update reuses the event that
// tracked the run before: no event is created or destroyed in the steady
// state (a cuEventCreate armed to fail around each Run is never reached),
// and the run before's lease is released when Run returns.
func TestCachedRunReusesTheTrackingEventOfAFinishedRun(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	s := testenv.NewStream(t)
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	var leased counter
	c := graph.NewCached(graph.DefaultMode)
	run := func(v int32) error {
		return c.Run(s, func(s libcuda.Stream) error {
			if !graph.Lease(s, leased.release) {
				t.Error("Lease refused on the capturing stream")
			}
			return k.fillAdd(s, buf, n, v, 0)
		})
	}
	testenv.Must(t, run(1))
	checkInts(t, "after the first run", s, buf, host, 1)
	live := testenv.SimStat(t, "live_events")
	for v := range int32(5) {
		testenv.SimFailNext(t, "cuEventCreate", 1, libcuda.CUDA_ERROR_OUT_OF_MEMORY)
		err := run(2 + v)
		// The failure is still armed: this call takes it (and disarms it).
		var ev libcuda.Event
		if cerr := libcuda.EventCreate(&ev, 0); cerr == nil {
			testenv.Must(t, libcuda.EventDestroy(ev))
			t.Fatalf("run %d called cuEventCreate", v+2)
		}
		testenv.Must(t, err)
		if got := testenv.SimStat(t, "live_events"); got != live {
			t.Fatalf("run %d: %d live events, want %d as after the first run", v+2, got, live)
		}
		if got, want := leased.get(), int(v)+1; got != want {
			t.Fatalf("run %d returned with %d leases released, want %d", v+2, got, want)
		}
		checkInts(t, "after a run", s, buf, host, 2+v)
	}
	testenv.MustBounded(t, "c.Close", c.Close)
	drained(t)
	if got := leased.get(); got != 6 {
		t.Fatalf("%d leases released after Close, want 6", got)
	}
}
