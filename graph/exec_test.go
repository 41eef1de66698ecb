package graph_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/libcuda"
)

func TestGraphUploadThenLaunch(t *testing.T) {
	noErrorsLogged(t)
	onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 256
	s := newStream(t)
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error { return k.fillAdd(s, buf, n, 6, 1) })
	must(t, err)
	defer func() { must(t, g.Destroy()) }()
	e, err := g.Instantiate()
	must(t, err)
	must(t, e.Upload(s))
	must(t, e.Launch(s))
	checkInts(t, "after upload and launch", s, buf, host, 7)
	must(t, e.Destroy())
	if err := e.Launch(s); !errors.Is(err, graph.ErrDestroyed) {
		t.Fatalf("Launch after Destroy = %v, want ErrDestroyed", err)
	}
	if err := e.Destroy(); !errors.Is(err, graph.ErrDestroyed) {
		t.Fatalf("a second Destroy = %v, want ErrDestroyed", err)
	}
}

func TestGraphExecUpdateInPlaceAppliesNewParameters(t *testing.T) {
	noErrorsLogged(t)
	onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 512
	s := newStream(t)
	buf, other := deviceInts(t, n), deviceInts(t, n)
	host := pinnedInts(t, n)
	capture := func(buf libcuda.Deviceptr, v int32, adds int) *graph.Graph {
		t.Helper()
		g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error { return k.fillAdd(s, buf, n, v, adds) })
		must(t, err)
		t.Cleanup(func() { must(t, g.Destroy()) })
		return g
	}
	e, err := capture(buf, 1, 0).Instantiate()
	must(t, err)
	defer func() { must(t, e.Destroy()) }()
	must(t, e.Launch(s))
	checkInts(t, "first graph", s, buf, host, 1)

	update := func(g *graph.Graph, want bool) {
		t.Helper()
		inPlace, err := e.Update(g)
		must(t, err)
		if inPlace != want {
			t.Fatalf("Update: inPlace = %v, want %v", inPlace, want)
		}
	}
	update(capture(buf, 2, 0), true) // a new value
	must(t, e.Launch(s))
	checkInts(t, "after an update with fill 2", s, buf, host, 2)

	update(capture(other, 5, 0), true) // a new pointer
	must(t, e.Launch(s))
	checkInts(t, "the other buffer after an update to it", s, other, host, 5)
	checkInts(t, "the first buffer after the update to the other", s, buf, host, 2)

	update(capture(buf, 9, 1), false) // another topology: refused, e unchanged
	must(t, e.Launch(s))
	checkInts(t, "the other buffer after a refused update", s, other, host, 5)
	checkInts(t, "the first buffer after a refused update", s, buf, host, 2)
}

// The driver refuses to launch an executable graph into a stream capture
// and invalidates the capture (H200); Launch refuses it first, clearly,
// and the capture goes on.
func TestExecLaunchIntoACaptureIsRefusedAndTheCaptureSurvives(t *testing.T) {
	noErrorsLogged(t)
	onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 256
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	s := newStream(t)
	var leased counter
	inner, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		graph.Lease(s, leased.release)
		return k.fillAdd(s, buf, n, 50, 0)
	})
	must(t, err)
	ie, err := inner.Instantiate()
	must(t, err)
	must(t, inner.Destroy())
	var launchErr error
	outer, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		launchErr = ie.Launch(s)
		return k.fillAdd(s, buf, n, 7, 0)
	})
	must(t, err)
	if !errors.Is(launchErr, libcuda.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) {
		t.Fatalf("launch into a capture = %v, want CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", launchErr)
	}
	oe, err := outer.Instantiate()
	must(t, err)
	must(t, oe.Launch(s))
	checkInts(t, "after the outer graph's launch", s, buf, host, 7)
	must(t, outer.Destroy())
	must(t, oe.Destroy())
	must(t, ie.Destroy())
	drained(t)
	if leased.get() != 1 {
		t.Fatalf("the inner graph's lease was released %d times, want once", leased.get())
	}
}
