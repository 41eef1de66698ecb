//go:build !gpu && (linux || windows)

package graph_test

import (
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// A loop of launches of an executable graph that leases records no event
// per launch, as C's loop of cuGraphLaunch records none (issue 29): the
// launches are settled once, at Destroy, by one record on the stream of
// the last launch, and the lease goes only after that launch has run.
func TestLaunchLoopRecordsNoEventPerLaunch(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	drained(t)
	s := testenv.NewStream(t)
	one := deviceInts(t, 1)
	testenv.Must(t, libcuda.MemsetD32(one, 1, 1))
	word := pinnedInts(t, 1)
	var released, sawWord atomic.Int32
	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		graph.Lease(s, func() {
			released.Add(1)
			sawWord.Store(atomic.LoadInt32(&word[0]))
		})
		return libcuda.MemcpyDtoHAsync(unsafe.Pointer(&word[0]), one, 4, s)
	})
	testenv.Must(t, err)
	e, err := g.Instantiate()
	testenv.Must(t, err)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	gt := testenv.NewGate(t)
	gt.Hold(t, s)
	records := testenv.SimStat(t, "event_records")
	const launches = 50
	for range launches {
		testenv.Must(t, e.Launch(s))
	}
	if n := testenv.SimStat(t, "event_records") - records; n != 0 {
		t.Fatalf("%d event records in %d launches; want none", n, launches)
	}
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	if n := testenv.SimStat(t, "event_records") - records; n != 1 {
		t.Fatalf("%d event records after Destroy; want the one that settles the launches", n)
	}
	if released.Load() != 0 {
		t.Fatal("the lease was released while the launches were held at the gate")
	}
	gt.Open()
	drained(t)
	if released.Load() != 1 || sawWord.Load() != 1 {
		t.Fatalf("lease released %d times, seeing the launches' word %d; want once, after they ran (1)", released.Load(), sawWord.Load())
	}
}

// Launches not yet settled when their stream is destroyed (its handle
// serving the next stream at once, as on the H200) are covered by a wait
// for the whole context: Destroy's release waits on a helper for
// cuCtxSynchronize, and the lease goes once the launches have run, not
// before, whatever the new stream with the old handle does.
func TestUnsettledLaunchesOnADestroyedStreamWaitForTheContext(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	drained(t)
	capt := testenv.NewStream(t)
	one := deviceInts(t, 1)
	testenv.Must(t, libcuda.MemsetD32(one, 1, 1))
	word := pinnedInts(t, 1)
	var released, sawWord atomic.Int32
	g, err := graph.Capture(capt, graph.DefaultMode, func(s libcuda.Stream) error {
		graph.Lease(s, func() {
			released.Add(1)
			sawWord.Store(atomic.LoadInt32(&word[0]))
		})
		return libcuda.MemcpyDtoHAsync(unsafe.Pointer(&word[0]), one, 4, s)
	})
	testenv.Must(t, err)
	e, err := g.Instantiate()
	testenv.Must(t, err)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	var s libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	gt := testenv.NewGate(t)
	gt.Hold(t, s)
	testenv.Must(t, e.Launch(s))
	testenv.Must(t, libcuda.StreamDestroy(s)) // its work runs on
	var again libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&again, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.StreamDestroy(again)) })
	if again != s {
		t.Logf("the new stream has handle %#x, the destroyed one had %#x", again, s)
	}
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	testenv.Eventually(t, "the context wait on a helper", func() bool { return sync.ReadStats().BlockingHelpers >= 1 })
	if released.Load() != 0 {
		t.Fatal("the lease was released while the launch on the destroyed stream was held")
	}
	gt.Open()
	drained(t)
	if released.Load() != 1 || sawWord.Load() != 1 {
		t.Fatalf("lease released %d times, seeing the launch's word %d; want once, after it ran (1)", released.Load(), sawWord.Load())
	}
}

// The same during a capture: the context wait is refused while the
// capture is in progress (cuCtxSynchronize would break it), tried again
// once it has ended, and the capture is not invalidated; the lease goes
// after both the launch and the capture.
func TestUnsettledLaunchesDuringACaptureWaitForItsEnd(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	drained(t)
	capt := testenv.NewStream(t)
	one := deviceInts(t, 1)
	testenv.Must(t, libcuda.MemsetD32(one, 1, 1))
	word := pinnedInts(t, 1)
	var released atomic.Int32
	g, err := graph.Capture(capt, graph.DefaultMode, func(s libcuda.Stream) error {
		graph.Lease(s, func() { released.Add(1) })
		return libcuda.MemcpyDtoHAsync(unsafe.Pointer(&word[0]), one, 4, s)
	})
	testenv.Must(t, err)
	e, err := g.Instantiate()
	testenv.Must(t, err)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	var s libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	testenv.Must(t, e.Launch(s))
	testenv.Must(t, libcuda.StreamDestroy(s))
	invalidated := testenv.SimStat(t, "captures_invalidated")
	entry := sync.StartCapture()
	other := testenv.NewStream(t)
	testenv.Must(t, libcuda.StreamBeginCapture(other, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL))
	testenv.Must(t, libcuda.MemsetD8Async(one, 1, 4, other))
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	testenv.Eventually(t, "the context wait postponed", func() bool { return sync.ReadStats().Postponed >= 1 })
	if released.Load() != 0 {
		t.Fatal("the lease was released during the capture")
	}
	var raw libcuda.Graph
	testenv.Must(t, libcuda.StreamEndCapture(other, &raw))
	entry.End()
	testenv.Must(t, libcuda.GraphDestroy(raw))
	drained(t)
	if released.Load() != 1 {
		t.Fatalf("lease released %d times after the capture ended; want once", released.Load())
	}
	if n := testenv.SimStat(t, "captures_invalidated") - invalidated; n != 0 {
		t.Fatalf("%d captures invalidated", n)
	}
}
