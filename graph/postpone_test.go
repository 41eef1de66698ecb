package graph_test

import (
	"context"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// blockedCapture starts a capture on a goroutine of its own that stays in
// progress until the returned function is called; that function returns
// the capture's error.
func blockedCapture(t *testing.T, s libcuda.Stream) (end func() error) {
	t.Helper()
	begun, release := make(chan struct{}), make(chan struct{})
	res := make(chan error, 1)
	go func() {
		g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(libcuda.Stream) error {
			close(begun)
			<-release
			return nil
		})
		if err == nil {
			err = g.Destroy()
		}
		res <- err
	}()
	var once gosync.Once
	var err error
	end = func() error {
		once.Do(func() {
			close(release)
			err = testenv.Recv(t, res, "the blocked capture to end")
		})
		return err
	}
	// A test that fails before it ends the capture ends it here, before
	// the stream is destroyed and before anything waits for the captures.
	t.Cleanup(func() { _ = end() })
	testenv.Recv(t, begun, "the capture to begin")
	return end
}

func TestPostponedWorkRunsOnceInOrderAfterCapturesEnd(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	end1 := blockedCapture(t, testenv.NewStream(t))
	end2 := blockedCapture(t, testenv.NewStream(t))

	var mu gosync.Mutex
	var order []int
	var during atomic.Int32
	const n = 100
	for i := range n {
		sync.Postpone(func() {
			if sync.CapturesInProgress() != 0 {
				during.Add(1)
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		})
	}
	// A wait for the whole context, which no capture allows, queued too.
	ctxWait := make(chan error, 1)
	sync.Postpone(func() { ctxWait <- sync.Context(context.Background(), cu) })
	ran := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(order)
	}
	time.Sleep(20 * time.Millisecond)
	if got := ran(); got != 0 {
		t.Fatalf("%d postponed functions ran during two captures", got)
	}
	testenv.Must(t, end1())
	time.Sleep(20 * time.Millisecond)
	if got := ran(); got != 0 {
		t.Fatalf("%d postponed functions ran while a capture was still in progress", got)
	}
	testenv.Must(t, end2())
	drained(t)
	mu.Lock()
	defer mu.Unlock()
	if len(order) != n {
		t.Fatalf("%d postponed functions ran, want %d", len(order), n)
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("postponed functions ran in the order %v", order)
		}
	}
	if during.Load() != 0 {
		t.Fatalf("%d postponed functions ran while a capture was in progress", during.Load())
	}
	testenv.Must(t, testenv.Recv(t, ctxWait, "the postponed context wait"))
	noCaptureLeft(t)
}

func TestPostponedWorkRunsAtOnceWhenNothingCaptures(t *testing.T) {
	done := make(chan struct{})
	sync.Postpone(func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a function postponed while nothing captures did not run")
	}
	drained(t)
}

// A capture that starts while a postponed function runs waits for it.
func TestCaptureWaitsForARunningPostponedFunction(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	running, finish := make(chan struct{}), make(chan struct{})
	sync.Postpone(func() {
		close(running)
		<-finish
	})
	testenv.Recv(t, running, "the postponed function to run")
	captured := testenv.WaitAsync(func() error {
		g, err := graph.Capture(s, graph.DefaultMode, func(libcuda.Stream) error { return nil })
		if err == nil {
			err = g.Destroy()
		}
		return err
	})
	testenv.StillWaiting(t, "a capture during a postponed function", captured)
	var st libcuda.StreamCaptureStatus
	testenv.Must(t, libcuda.StreamIsCapturing(s, &st))
	if st != libcuda.CU_STREAM_CAPTURE_STATUS_NONE {
		t.Fatal("the capture began while a postponed function ran")
	}
	close(finish)
	testenv.Finished(t, "the capture after the postponed function", captured)
	drained(t)
}

// A postponed function that blocks counts as background work while it
// runs: sync's statistics count it as the postponed function running,
// Drain waits for it (a Drain whose context has ended says so), and
// returns once it has returned.
func TestDrainWaitsForABlockingPostponedFunction(t *testing.T) {
	running, finish := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	sync.Postpone(func() {
		close(running)
		<-finish
		finished.Store(true)
	})
	t.Cleanup(func() {
		select {
		case <-finish:
		default:
			close(finish)
		}
	})
	testenv.Recv(t, running, "the postponed function to run")
	if n := sync.ReadStats().PostponedRunning; n != 1 {
		t.Fatalf("while a postponed function blocks, sync counts %d running; want 1", n)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := graph.Drain(ended); err == nil {
		t.Fatal("Drain with an ended context returned nil while a postponed function runs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	drain := testenv.WaitAsync(func() error { return graph.Drain(ctx) })
	testenv.StillWaiting(t, "Drain while the postponed function blocks", drain)
	close(finish)
	testenv.Finished(t, "Drain", drain)
	if !finished.Load() {
		t.Fatal("Drain returned before the postponed function had")
	}
	// sync marks the function done just after graph's count (which Drain
	// reads) has dropped.
	testenv.Eventually(t, "sync counting no postponed function running", func() bool { return sync.ReadStats().PostponedRunning == 0 })
}
