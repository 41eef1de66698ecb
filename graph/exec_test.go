package graph_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

func TestGraphUploadThenLaunch(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 256
	s := testenv.NewStream(t)
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error { return k.fillAdd(s, buf, n, 6, 1) })
	testenv.Must(t, err)
	defer func() { testenv.MustBounded(t, "g.Destroy", g.Destroy) }()
	e, err := g.Instantiate()
	testenv.Must(t, err)
	testenv.Must(t, e.Upload(s))
	testenv.Must(t, e.Launch(s))
	checkInts(t, "after upload and launch", s, buf, host, 7)
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	if err := e.Launch(s); !errors.Is(err, graph.ErrDestroyed) {
		t.Fatalf("Launch after Destroy = %v, want ErrDestroyed", err)
	}
	if err := testenv.BoundedErr(t, "e.Destroy", e.Destroy); !errors.Is(err, graph.ErrDestroyed) {
		t.Fatalf("a second Destroy = %v, want ErrDestroyed", err)
	}
}

func TestGraphExecUpdateInPlaceAppliesNewParameters(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 512
	s := testenv.NewStream(t)
	buf, other := deviceInts(t, n), deviceInts(t, n)
	host := pinnedInts(t, n)
	capture := func(buf libcuda.Deviceptr, v int32, adds int) *graph.Graph {
		t.Helper()
		g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error { return k.fillAdd(s, buf, n, v, adds) })
		testenv.Must(t, err)
		t.Cleanup(func() { testenv.MustBounded(t, "g.Destroy", g.Destroy) })
		return g
	}
	e, err := capture(buf, 1, 0).Instantiate()
	testenv.Must(t, err)
	defer func() { testenv.MustBounded(t, "e.Destroy", e.Destroy) }()
	testenv.Must(t, e.Launch(s))
	checkInts(t, "first graph", s, buf, host, 1)

	update := func(g *graph.Graph, want bool) {
		t.Helper()
		inPlace, err := e.Update(g)
		testenv.Must(t, err)
		if inPlace != want {
			t.Fatalf("Update: inPlace = %v, want %v", inPlace, want)
		}
	}
	update(capture(buf, 2, 0), true) // a new value
	testenv.Must(t, e.Launch(s))
	checkInts(t, "after an update with fill 2", s, buf, host, 2)

	update(capture(other, 5, 0), true) // a new pointer
	testenv.Must(t, e.Launch(s))
	checkInts(t, "the other buffer after an update to it", s, other, host, 5)
	checkInts(t, "the first buffer after the update to the other", s, buf, host, 2)

	update(capture(buf, 9, 1), false) // another topology: refused, e unchanged
	testenv.Must(t, e.Launch(s))
	checkInts(t, "the other buffer after a refused update", s, other, host, 5)
	checkInts(t, "the first buffer after a refused update", s, buf, host, 2)
}

// The driver refuses to launch an executable graph into a stream capture
// and invalidates the capture (H200); Launch refuses it first, clearly,
// and the capture goes on.
func TestExecLaunchIntoACaptureIsRefusedAndTheCaptureSurvives(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 256
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	s := testenv.NewStream(t)
	var leased counter
	inner, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		graph.Lease(s, leased.release)
		return k.fillAdd(s, buf, n, 50, 0)
	})
	testenv.Must(t, err)
	ie, err := inner.Instantiate()
	testenv.Must(t, err)
	testenv.MustBounded(t, "inner.Destroy", inner.Destroy)
	var launchErr error
	outer, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		launchErr = ie.Launch(s)
		return k.fillAdd(s, buf, n, 7, 0)
	})
	testenv.Must(t, err)
	if !errors.Is(launchErr, libcuda.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) {
		t.Fatalf("launch into a capture = %v, want CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", launchErr)
	}
	oe, err := outer.Instantiate()
	testenv.Must(t, err)
	testenv.Must(t, oe.Launch(s))
	checkInts(t, "after the outer graph's launch", s, buf, host, 7)
	testenv.MustBounded(t, "outer.Destroy", outer.Destroy)
	testenv.MustBounded(t, "oe.Destroy", oe.Destroy)
	testenv.MustBounded(t, "ie.Destroy", ie.Destroy)
	drained(t)
	if leased.get() != 1 {
		t.Fatalf("the inner graph's lease was released %d times, want once", leased.get())
	}
}
