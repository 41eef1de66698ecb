package graph_test

import (
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// A release that an update runs on the caller's goroutine (the launches
// before it have finished) runs with no lock of the package held: it may
// call back into the Cached that released it.
func TestReleaseRunByCachedRunMayCallBackIntoIt(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	s := testenv.NewStream(t)
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	c := graph.NewCached(graph.DefaultMode)
	var calls counter
	callBack := func() {
		c.Stats() // locks c
		calls.release()
	}
	run := func(v int32) error {
		return c.Run(s, func(s libcuda.Stream) error {
			graph.Lease(s, callBack)
			return k.fillAdd(s, buf, n, v, 0)
		})
	}
	testenv.Must(t, run(1))
	checkInts(t, "after the first run", s, buf, host, 1)
	var err error
	testenv.Recv(t, testenv.Go(func() { err = run(2) }), "the second run, whose update releases the first run's lease")
	testenv.Must(t, err)
	if calls.get() != 1 {
		t.Fatalf("the first run's lease was released %d times when the second returned, want once", calls.get())
	}
	checkInts(t, "after the second run", s, buf, host, 2)
	testenv.MustBounded(t, "c.Close", c.Close)
	drained(t)
	if calls.get() != 2 {
		t.Fatalf("leases released %d times after Close, want 2", calls.get())
	}
}

// The same for Exec.Update: the release may call back into the Exec being
// updated and the Graph it is updated with.
func TestReleaseRunByExecUpdateMayCallBackIntoIt(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	s := testenv.NewStream(t)
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	var e *graph.Exec
	var g2 *graph.Graph
	var calls counter
	callBack := func() {
		e.Raw()                               // locks e
		if _, err := g2.Nodes(); err != nil { // locks g2
			t.Errorf("Nodes of the graph being updated with, from a release: %v", err)
		}
		calls.release()
	}
	capture := func(v int32, release func()) *graph.Graph {
		g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
			graph.Lease(s, release)
			return k.fillAdd(s, buf, n, v, 0)
		})
		testenv.Must(t, err)
		return g
	}
	g1 := capture(1, callBack)
	var err error
	e, err = g1.Instantiate()
	testenv.Must(t, err)
	testenv.MustBounded(t, "g1.Destroy", g1.Destroy)
	testenv.Must(t, e.Launch(s))
	checkInts(t, "after the first launch", s, buf, host, 1)
	g2 = capture(2, func() {})
	var inPlace bool
	testenv.Recv(t, testenv.Go(func() { inPlace, err = e.Update(g2) }), "the update that releases the first graph's lease")
	testenv.Must(t, err)
	if !inPlace {
		t.Fatal("the update was not in place")
	}
	if calls.get() != 1 {
		t.Fatalf("the first graph's lease was released %d times when Update returned, want once", calls.get())
	}
	testenv.Must(t, e.Launch(s))
	checkInts(t, "after the updated launch", s, buf, host, 2)
	testenv.MustBounded(t, "g2.Destroy", g2.Destroy)
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	drained(t)
}
