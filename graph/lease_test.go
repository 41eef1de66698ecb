package graph_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// A lease is released only once the graph and every executable graph made
// from it are destroyed and the last launch has finished; Destroy does not
// wait for that.
func TestLeaseIsReleasedOnlyAfterExecDestroyedAndLastLaunchFinished(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 256
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	s, launches, notCaptured := testenv.NewStream(t), testenv.NewStream(t), testenv.NewStream(t)
	gt := testenv.NewGate(t)
	var leased counter
	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		if graph.Lease(notCaptured, func() { t.Error("a lease on a stream not captured was kept") }) {
			t.Error("Lease on a stream that is not captured = true")
		}
		if !graph.Lease(s, leased.release) {
			t.Error("Lease on the capturing stream = false")
		}
		return k.fillAdd(s, buf, n, 8, 1)
	})
	testenv.Must(t, err)
	e1, err := g.Instantiate()
	testenv.Must(t, err)
	e2, err := g.Instantiate()
	testenv.Must(t, err)
	gt.Hold(t, launches)
	testenv.Must(t, e1.Launch(launches))
	testenv.Must(t, e1.Launch(launches))

	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	testenv.MustBounded(t, "e2.Destroy", e2.Destroy)
	drained(t)
	if leased.get() != 0 {
		t.Fatal("the lease was released while an executable graph still existed")
	}
	// Destroy returns while the launch is held: the gate opens only below.
	var destroyErr error
	testenv.Recv(t, testenv.Go(func() { destroyErr = e1.Destroy() }), "Destroy to return while the last launch is held")
	testenv.Must(t, destroyErr)
	if err := libcuda.StreamQuery(launches); !errors.Is(err, libcuda.CUDA_ERROR_NOT_READY) {
		t.Fatalf("the held launch's stream: query = %v, want CUDA_ERROR_NOT_READY", err)
	}
	stillPending(t, "while the last launch is held")
	if leased.get() != 0 {
		t.Fatal("the lease was released before the last launch finished")
	}
	gt.Open()
	drained(t)
	if leased.get() != 1 {
		t.Fatalf("the lease was released %d times, want once", leased.get())
	}
	checkInts(t, "after the launches", launches, buf, host, 9)
	if graph.Lease(s, leased.release) {
		t.Fatal("Lease after the capture = true")
	}
}

func TestLeaseFollowsUpdatesOfTheExec(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 256
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	s, launches := testenv.NewStream(t), testenv.NewStream(t)
	gt := testenv.NewGate(t)
	var first, second counter
	capture := func(c *counter, v int32) *graph.Graph {
		g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
			graph.Lease(s, c.release)
			return k.fillAdd(s, buf, n, v, 0)
		})
		testenv.Must(t, err)
		return g
	}
	g1 := capture(&first, 1)
	e, err := g1.Instantiate()
	testenv.Must(t, err)
	testenv.MustBounded(t, "g1.Destroy", g1.Destroy)
	gt.Hold(t, launches)
	testenv.Must(t, e.Launch(launches)) // held: it uses what the first lease holds

	g2 := capture(&second, 2)
	inPlace, err := e.Update(g2)
	testenv.Must(t, err)
	if !inPlace {
		t.Fatal("the update was not in place")
	}
	testenv.MustBounded(t, "g2.Destroy", g2.Destroy)
	stillPending(t, "while the launch made before the update is held")
	if first.get() != 0 {
		t.Fatal("the first lease was released while a launch made before the update was held")
	}
	gt.Open()
	drained(t)
	if first.get() != 1 || second.get() != 0 {
		t.Fatalf("after the held launch: first lease released %d times, second %d; want 1 and 0", first.get(), second.get())
	}
	testenv.Must(t, e.Launch(launches))
	checkInts(t, "after the updated launch", launches, buf, host, 2)
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	drained(t)
	if second.get() != 1 {
		t.Fatalf("the second lease was released %d times, want once", second.get())
	}
}

// A stream that joins the capture through an event is part of it: a lease
// taken on it belongs to that capture.
func TestLeaseOnAStreamThatJoinedTheCapture(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 256
	a, b := deviceInts(t, n), deviceInts(t, n)
	host := pinnedInts(t, n)
	s, forked := testenv.NewStream(t), testenv.NewStream(t)
	var fork, join libcuda.Event
	for _, e := range []*libcuda.Event{&fork, &join} {
		testenv.Must(t, libcuda.EventCreate(e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
		defer func() { testenv.Must(t, libcuda.EventDestroy(*e)) }()
	}
	var leased counter
	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		if err := k.fillAdd(s, a, n, 1, 0); err != nil {
			return err
		}
		if err := libcuda.EventRecord(fork, s); err != nil {
			return err
		}
		if err := libcuda.StreamWaitEvent(forked, fork, 0); err != nil {
			return err
		}
		if !graph.Lease(forked, leased.release) {
			return errors.New("Lease on the stream that joined the capture = false")
		}
		if err := k.fillAdd(forked, b, n, 2, 1); err != nil {
			return err
		}
		if err := libcuda.EventRecord(join, forked); err != nil {
			return err
		}
		return libcuda.StreamWaitEvent(s, join, 0)
	})
	testenv.Must(t, err)
	e, err := g.Instantiate()
	testenv.Must(t, err)
	testenv.Must(t, e.Launch(s))
	checkInts(t, "the origin stream's buffer", s, a, host, 1)
	checkInts(t, "the joined stream's buffer", s, b, host, 3)
	drained(t)
	if leased.get() != 0 {
		t.Fatal("the lease taken on the joined stream was released while the graphs lived")
	}
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	drained(t)
	if leased.get() != 1 {
		t.Fatalf("the lease taken on the joined stream was released %d times, want once", leased.get())
	}
}

// A lease from a stream that joined a Cached's capture belongs to that
// run's capture, also while another goroutine's capture is in progress
// (Lease then finds the capture by the id the driver gives for the joined
// stream, among the captures whose ids it asks for): each run's lease goes
// when the run's graph is replaced or closed, the other capture's when its
// graph goes, whichever ends first.
func TestLeaseOnAStreamThatJoinedEachRunOfACached(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 256
	a, b, o := deviceInts(t, n), deviceInts(t, n), deviceInts(t, n)
	host := pinnedInts(t, n)
	s, forked, other := testenv.NewStream(t), testenv.NewStream(t), testenv.NewStream(t)
	var fork, join libcuda.Event
	for _, e := range []*libcuda.Event{&fork, &join} {
		testenv.Must(t, libcuda.EventCreate(e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
		defer func() { testenv.Must(t, libcuda.EventDestroy(*e)) }()
	}
	// The other capture stays open until the runs are done.
	var otherLeased counter
	in, proceed := make(chan struct{}), make(chan struct{})
	otherGraph := make(chan *graph.Graph, 1)
	released := false
	release := func() {
		if !released {
			released = true
			close(proceed)
		}
	}
	defer release() // the other capture ends whatever happens here
	captured := testenv.WaitAsync(func() error {
		g, err := graph.Capture(other, graph.DefaultMode, func(s libcuda.Stream) error {
			close(in)
			<-proceed
			if !graph.Lease(s, otherLeased.release) {
				return errors.New("Lease on the other capture's stream = false")
			}
			return k.fillAdd(s, o, n, 5, 0)
		})
		otherGraph <- g
		return err
	})
	testenv.Recv(t, in, "the other capture to begin")
	var runs [3]counter
	c := graph.NewCached(graph.DefaultMode)
	for i := range runs {
		testenv.Must(t, c.Run(s, func(s libcuda.Stream) error {
			if err := k.fillAdd(s, a, n, int32(i), 0); err != nil {
				return err
			}
			if err := libcuda.EventRecord(fork, s); err != nil {
				return err
			}
			if err := libcuda.StreamWaitEvent(forked, fork, 0); err != nil {
				return err
			}
			if !graph.Lease(forked, runs[i].release) {
				return errors.New("Lease on the stream that joined the capture = false")
			}
			if err := k.fillAdd(forked, b, n, int32(i), 1); err != nil {
				return err
			}
			if err := libcuda.EventRecord(join, forked); err != nil {
				return err
			}
			return libcuda.StreamWaitEvent(s, join, 0)
		}))
		checkInts(t, "the joined stream's buffer", s, b, host, int32(i)+1)
	}
	release()
	testenv.Must(t, testenv.Recv(t, captured, "the other capture"))
	g := <-otherGraph
	drained(t)
	if got := [3]int{runs[0].get(), runs[1].get(), runs[2].get()}; got != [3]int{1, 1, 0} || otherLeased.get() != 0 {
		t.Fatalf("the runs' leases released %v times and the other capture's %d, want [1 1 0] and 0", got, otherLeased.get())
	}
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	drained(t)
	if runs[2].get() != 0 || otherLeased.get() != 1 {
		t.Fatalf("after the other graph went: the last run's lease released %d times, the other's %d, want 0 and 1", runs[2].get(), otherLeased.get())
	}
	testenv.MustBounded(t, "c.Close", c.Close)
	drained(t)
	if runs[2].get() != 1 {
		t.Fatalf("after Close, the last run's lease was released %d times, want once", runs[2].get())
	}
}

// The per-thread stream's handle names another stream on each thread: a
// capture of it is found by its id, asked at the begin, and a lease taken
// on it on the capturing thread belongs to it.
func TestLeaseOnThePerThreadStreamsCapture(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 256
	a := deviceInts(t, n)
	host := pinnedInts(t, n)
	s := testenv.NewStream(t)
	var leased counter
	g, err := graph.Capture(libcuda.CU_STREAM_PER_THREAD, graph.DefaultMode, func(pts libcuda.Stream) error {
		if !graph.Lease(pts, leased.release) {
			return errors.New("Lease on the per-thread stream being captured = false")
		}
		return k.fillAdd(pts, a, n, 4, 0)
	})
	testenv.Must(t, err)
	e, err := g.Instantiate()
	testenv.Must(t, err)
	testenv.Must(t, e.Launch(s))
	checkInts(t, "the per-thread capture's buffer", s, a, host, 4)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	drained(t)
	if leased.get() != 0 {
		t.Fatal("the lease was released while the executable graph lived")
	}
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	drained(t)
	if leased.get() != 1 {
		t.Fatalf("the lease was released %d times, want once", leased.get())
	}
}
