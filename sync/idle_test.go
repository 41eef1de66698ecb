package sync_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// The idle path of a wait (stream idle, event done) is one query: it
// allocates nothing, in every mode (issue 17).
func TestIdleWaitAllocatesNothing(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	var ev libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(ev)) })
	testenv.Must(t, libcuda.EventRecord(ev, s))
	testenv.Must(t, libcuda.StreamSynchronize(s))
	ctx := testenv.Context(t)
	for _, p := range modes {
		for _, c := range []struct {
			name string
			wait func() error
		}{
			{"Stream", func() error { return p.Stream(ctx, 0, s) }},
			{"Event", func() error { return p.Event(ctx, ev) }},
		} {
			var err error
			if n := testing.AllocsPerRun(1000, func() { err = errors.Join(err, c.wait()) }); n != 0 {
				t.Errorf("%v %s: %v allocations a wait, want 0", p.Mode, c.name, n)
			}
			testenv.Must(t, err)
		}
	}
	var err error
	if n := testing.AllocsPerRun(1000, func() {
		done, e := sync.EventDone(ev)
		if !done && e == nil {
			e = errors.New("EventDone: not done")
		}
		err = errors.Join(err, e)
	}); n != 0 {
		t.Errorf("EventDone: %v allocations a query, want 0", n)
	}
	testenv.Must(t, err)
}

// The limit on queries in flight (GOMAXPROCS) counts queries only: longer
// calls that hold captures back (IfNoCapture here) do not make an idle
// wait's queries count as "not ready". A Polling wait, which never hands
// over to a helper, would not return while they run if they counted.
func TestLongCallsInFlightDoNotCountAgainstTheQueryLimit(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	n := runtime.GOMAXPROCS(0) + 2
	release := make(chan struct{})
	running := make(chan struct{}, n)
	ended := make(chan error, n)
	for range n {
		go func() {
			ran, err := sync.IfNoCapture(func() error {
				running <- struct{}{}
				<-release
				return nil
			})
			if err == nil && !ran {
				err = errors.New("IfNoCapture did not run its function with no capture in progress")
			}
			ended <- err
		}()
	}
	defer func() {
		close(release)
		for range n {
			if err := testenv.Recv(t, ended, "an IfNoCapture call to end"); err != nil {
				t.Error(err)
			}
		}
	}()
	for range n {
		testenv.Recv(t, running, "the IfNoCapture functions to run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	if err := (sync.Policy{Mode: sync.Polling}).Stream(ctx, 0, s); err != nil {
		t.Fatalf("Polling wait on an idle stream with %d IfNoCapture calls in flight: %v", n, err)
	}
}

// Idle waits from many goroutines, back to back, never run into a
// global-mode capture that StartCapture admitted: every capture ends with
// its graph (the simulator, like the driver, invalidates a global capture
// when another thread queries in global mode during it).
func TestIdleWaitsNeverRunIntoACapture(t *testing.T) {
	testenv.OnPrimary(t, 0)
	dev := deviceInts(t, 16)
	idle := testenv.NewStream(t)
	captured := testenv.NewStream(t)
	var ev libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(ev)) })
	testenv.Must(t, libcuda.EventRecord(ev, idle))
	testenv.Must(t, libcuda.StreamSynchronize(idle))
	invalidated, sim := testenv.Stat(t, "captures_invalidated")

	stop := make(chan struct{})
	const waiters = 4
	errs := make(chan error, waiters)
	ctx := testenv.Context(t)
	for i := range waiters {
		go func() {
			var err error
			for err == nil {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				if i%2 == 0 {
					err = sync.Stream(ctx, 0, idle)
				} else {
					err = sync.Event(ctx, ev)
				}
			}
			errs <- err
		}()
	}
	captures := 100
	if testing.Short() {
		captures = 40
	}
	for i := range captures {
		entry := sync.StartCapture()
		err := libcuda.StreamBeginCapture(captured, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL)
		if err == nil {
			err = libcuda.MemsetD8Async(dev, 1, 64, captured)
			var g libcuda.Graph
			err = errors.Join(err, libcuda.StreamEndCapture(captured, &g))
			if g != 0 {
				err = errors.Join(err, libcuda.GraphDestroy(g))
			} else if err == nil {
				err = errors.New("no graph")
			}
		}
		entry.End()
		if err != nil {
			close(stop)
			t.Fatalf("capture %d beside idle waits: %v", i, err)
		}
		runtime.Gosched()
	}
	close(stop)
	t.Logf("capture wakeups: %d", sync.ReadStats().CaptureWakeups)
	for range waiters {
		if err := testenv.Recv(t, errs, "a waiter to stop"); err != nil {
			t.Errorf("an idle wait beside the captures: %v", err)
		}
	}
	if n, _ := testenv.Stat(t, "captures_invalidated"); sim && n != invalidated {
		t.Errorf("%d captures invalidated beside idle waits", n-invalidated)
	}
}
