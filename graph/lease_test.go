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

	testenv.Must(t, g.Destroy())
	testenv.Must(t, e2.Destroy())
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
	testenv.Must(t, g1.Destroy())
	gt.Hold(t, launches)
	testenv.Must(t, e.Launch(launches)) // held: it uses what the first lease holds

	g2 := capture(&second, 2)
	inPlace, err := e.Update(g2)
	testenv.Must(t, err)
	if !inPlace {
		t.Fatal("the update was not in place")
	}
	testenv.Must(t, g2.Destroy())
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
	testenv.Must(t, e.Destroy())
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
	testenv.Must(t, g.Destroy())
	testenv.Must(t, e.Destroy())
	drained(t)
	if leased.get() != 1 {
		t.Fatalf("the lease taken on the joined stream was released %d times, want once", leased.get())
	}
}
