//go:build !gpu

package graph_test

import (
	"context"
	"errors"
	"testing"
	"time"

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

// One registry: graph and sync see the same capture, findable by its id,
// and work postponed during it runs when it ends, notified, not polled.
func TestCapturesAreRegisteredOnceAndPostponedWorkRunsAtTheirEnd(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	dev := deviceMemory(t)
	ran := make(chan int, 1)
	g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
		if a, b := graph.InProgress(), sync.CapturesInProgress(); a != 1 || b != 1 {
			t.Errorf("during the capture: graph.InProgress %d, sync.CapturesInProgress %d; want 1 and 1", a, b)
		}
		var status libcuda.StreamCaptureStatus
		var id uint64
		if err := libcuda.StreamGetCaptureInfo(s, &status, &id, nil, nil, nil, nil); err != nil {
			return err
		}
		if _, ok := sync.LookupCapture(id, 0); !ok {
			t.Errorf("capture %d is not in sync's registry", id)
		}
		graph.Postpone(func() { ran <- sync.CapturesInProgress() })
		return memset(dev)(s)
	})
	testenv.Must(t, err)
	testenv.Must(t, g.Destroy())
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
		graph.Postpone(func() { close(ran) })
		return memset(dev)(s)
	})
	if !errors.Is(err, libcuda.CUDA_ERROR_UNKNOWN) {
		t.Fatalf("capture whose end failed: %v, want the injected error", err)
	}
	testenv.Recv(t, ran, "work postponed during the failed capture")
	if n := graph.InProgress(); n != 0 {
		t.Fatalf("graph.InProgress() = %d after the failed end", n)
	}
	if m := errs.Messages(); len(m) != 1 {
		t.Fatalf("logged %q; want the failed end once", m)
	}
	g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, memset(dev))
	testenv.Must(t, err)
	testenv.Must(t, g.Destroy())
	if n := testenv.SimStat(t, "active_captures"); n != 0 {
		t.Fatalf("simulator: %d captures active", n)
	}
}

// A capture that starts while a context synchronize blocks waits for it by
// blocking, not by spinning: it is woken only when the call ends.
func TestCaptureStartBlocksBehindAContextWaitWithoutSpinning(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	busy := testenv.NewStream(t)
	gate := testenv.NewGate(t)
	gate.Hold(t, busy)
	s := testenv.NewStream(t)
	dev := deviceMemory(t)
	waited := make(chan error, 1)
	go func() { waited <- sync.Context(context.Background(), cu) }()
	testenv.Eventually(t, "the context synchronize in flight", func() bool { return sync.ReadStats().BlockingHelpers == 1 })
	captured := make(chan error, 1)
	go func() {
		g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, memset(dev))
		if err == nil {
			err = g.Destroy()
		}
		captured <- err
	}()
	testenv.Eventually(t, "the capture admitted", func() bool { return sync.ReadStats().Captures == 1 })
	w0 := sync.ReadStats().CaptureWakeups
	time.Sleep(20 * time.Millisecond) // room for a spinning start to spin; nothing is timed
	if w := sync.ReadStats().CaptureWakeups; w != w0 {
		t.Fatalf("the waiting capture start woke %d times while the call was in flight", w-w0)
	}
	if n := testenv.SimStat(t, "active_captures"); n != 0 {
		t.Fatalf("a capture began while cuCtxSynchronize was in flight")
	}
	gate.Open()
	testenv.Must(t, testenv.Recv(t, waited, "the context wait"))
	testenv.Must(t, testenv.Recv(t, captured, "the capture"))
	if w := sync.ReadStats().CaptureWakeups - w0; w > 2 {
		t.Fatalf("the capture start woke %d times for one call", w)
	}
}
