//go:build !gpu

package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// memset captures a small asynchronous memset on s.
func memset(dev libcuda.Deviceptr) func(libcuda.Stream) error {
	return func(s libcuda.Stream) error { return libcuda.MemsetD8Async(dev, 7, 64, s) }
}

func deviceMemory(t *testing.T) libcuda.Deviceptr {
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, 64))
	testenv.Fenced(t, func() { testenv.Must(t, libcuda.MemFree(dev)) })
	return dev
}

// One registry: graph and sync count the same capture once, graph's Lease
// finds its record, and work postponed during it runs when it ends,
// notified, not polled.
func TestCapturesAreRegisteredOnceAndPostponedWorkRunsAtTheirEnd(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	dev := deviceMemory(t)
	ran := make(chan int, 1)
	g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
		if a, b := sync.CapturesInProgress(), sync.CapturesInProgress(); a != 1 || b != 1 {
			t.Errorf("during the capture: sync.CapturesInProgress %d, sync.CapturesInProgress %d; want 1 and 1", a, b)
		}
		if !graph.Lease(s, func() {}) {
			t.Error("Lease did not find the capture in progress")
		}
		sync.Postpone(func() { ran <- sync.CapturesInProgress() })
		return memset(dev)(s)
	})
	testenv.Must(t, err)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	if n := testenv.Recv(t, ran, "the postponed function"); n != 0 {
		t.Fatalf("the postponed function ran during %d captures", n)
	}
	if n := sync.ReadStats().Captures; n != 0 {
		t.Fatalf("%d captures registered after the capture", n)
	}
}

// A failed cuStreamEndCapture still ends the capture's registration:
// postponed work runs, the failure is logged once, and the stream can be
// captured again.
func TestEndCaptureFailureEndsTheRegistration(t *testing.T) {
	errs := testenv.CaptureErrors(t)
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	dev := deviceMemory(t)
	ran := make(chan struct{})
	testenv.SimFailNext(t, "cuStreamEndCapture", 1, libcuda.CUDA_ERROR_UNKNOWN)
	_, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
		sync.Postpone(func() { close(ran) })
		return memset(dev)(s)
	})
	if !errors.Is(err, libcuda.CUDA_ERROR_UNKNOWN) {
		t.Fatalf("capture whose end failed: %v, want the injected error", err)
	}
	testenv.Recv(t, ran, "work postponed during the failed capture")
	if n := sync.CapturesInProgress(); n != 0 {
		t.Fatalf("sync.CapturesInProgress() = %d after the failed end", n)
	}
	if m := errs.Messages(); len(m) != 1 {
		t.Fatalf("logged %q; want the failed end once", m)
	}
	g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, memset(dev))
	testenv.Must(t, err)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	if n := testenv.SimStat(t, "active_captures"); n != 0 {
		t.Fatalf("simulator: %d captures active", n)
	}
}

// A capture that starts while a context wait's cuCtxSynchronize blocks on
// a busy stream waits for it without spinning, and only until the call is
// inside the driver (sync's entry bound): it begins, and ends valid, while
// the call is still blocked, which the call then survives.
func TestCaptureStartWaitsForAContextWaitOnlyUntilItIsInTheDriver(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	dev := deviceMemory(t)
	busy := testenv.NewStream(t)
	s := testenv.NewStream(t)
	gate := testenv.NewGate(t)
	gate.Hold(t, busy)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	waited := testenv.WaitAsync(func() error { return sync.Context(ctx, cu) })
	testenv.Eventually(t, "the context synchronize in flight", func() bool {
		st := sync.ReadStats()
		return st.ContextSyncs == 1 && st.BlockingHelpers == 1
	})
	invalidated := testenv.SimStat(t, "captures_invalidated")
	before := sync.ReadStats()
	captured := testenv.WaitAsync(func() error {
		g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, memset(dev))
		if err == nil {
			err = g.Destroy()
		}
		return err
	})
	if err := testenv.Recv(t, captured, "the capture, while the context wait blocks"); err != nil {
		t.Fatalf("capture beside a blocked context wait: %v", err)
	}
	testenv.StillWaiting(t, "the context wait", waited)
	after := sync.ReadStats()
	if n := after.CapturesBesideContextSyncs - before.CapturesBesideContextSyncs; n != 1 {
		t.Errorf("%d captures admitted beside the context synchronize, want 1", n)
	}
	if w := after.CaptureWakeups - before.CaptureWakeups; w > 3 {
		t.Errorf("the capture start woke %d times while it waited for the call's entry bound", w)
	}
	gate.Open()
	testenv.Finished(t, "the context wait", waited)
	if n := testenv.SimStat(t, "captures_invalidated") - invalidated; n != 0 {
		t.Fatalf("%d captures invalidated", n)
	}
}
