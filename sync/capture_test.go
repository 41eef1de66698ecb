package sync_test

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

func TestWaitsDuringCaptureAreRefusedAndTheCaptureSurvives(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	// Cleanups, not defers: they run in reverse order after a t.Fatal too,
	// so the capture ends (and sync hears of it) before anything else is
	// undone, and nothing waits on a capture left open; the device memory
	// is freed (a fence) after the gate opened.
	dev := deviceInts(t, 16)
	busy := testenv.NewStream(t)
	g := testenv.NewGate(t)
	g.Hold(t, busy)
	captured := testenv.NewStream(t)
	var outside libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&outside, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(outside)) })

	leave := sync.StartCapture().End
	left := false
	t.Cleanup(func() {
		if !left {
			leave()
		}
	})
	testenv.Must(t, libcuda.EventRecord(outside, busy))

	testenv.Must(t, libcuda.StreamBeginCapture(captured, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL))
	var graph libcuda.Graph
	ended := false
	endCapture := func() error {
		if ended {
			return nil
		}
		ended = true
		defer func() { left = true; leave() }()
		return libcuda.StreamEndCapture(captured, &graph)
	}
	t.Cleanup(func() {
		if err := endCapture(); err != nil && !t.Failed() {
			t.Error(err)
		}
		if graph != 0 {
			testenv.Must(t, libcuda.GraphDestroy(graph))
		}
	})
	testenv.Must(t, libcuda.MemsetD8Async(dev, 0, 64, captured))

	ctx := testenv.Context(t)
	// Refused, from another goroutine, with ErrCapturing.
	for what, wait := range map[string]func() error{
		"capturing stream": func() error { return sync.Stream(ctx, 0, captured) },
		"context":          func() error { return sync.Context(ctx, cu) },
	} {
		if err := testenv.Recv(t, testenv.WaitAsync(wait), "a wait during a capture"); !errors.Is(err, sync.ErrCapturing) {
			t.Errorf("wait on the %s during a capture = %v, want ErrCapturing", what, err)
		}
	}
	// Allowed: another stream and an event recorded outside the capture,
	// busy and then done, from other goroutines.
	ch := testenv.WaitAsync(func() error { return sync.Stream(ctx, 0, busy) })
	chEvent := testenv.WaitAsync(func() error { return sync.Event(ctx, outside) })
	testenv.StillWaiting(t, "busy stream wait", ch)
	testenv.StillWaiting(t, "event wait", chEvent)
	g.Open()
	testenv.Finished(t, "busy stream wait during a capture", ch)
	testenv.Finished(t, "event wait during a capture", chEvent)

	testenv.Must(t, endCapture())
	if graph == 0 {
		t.Fatal("the capture ended without a graph")
	}
}

// An event recorded in a capture cannot be told apart before it is queried,
// and the driver invalidates the capture when it is (measured on the H200):
// the wait says why it failed.
func TestWaitOnEventRecordedInCaptureSaysCapturing(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, 64))
	defer func() { testenv.Must(t, libcuda.MemFree(dev)) }()
	var e libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	defer func() { testenv.Must(t, libcuda.EventDestroy(e)) }()

	leave := sync.StartCapture().End
	defer leave()
	testenv.Must(t, libcuda.StreamBeginCapture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL))
	testenv.Must(t, libcuda.MemsetD8Async(dev, 0, 64, s))
	testenv.Must(t, libcuda.EventRecord(e, s))
	err := testenv.Recv(t, testenv.WaitAsync(func() error { return sync.Event(context.Background(), e) }), "the event wait")
	var g libcuda.Graph
	end := libcuda.StreamEndCapture(s, &g)
	if g != 0 {
		testenv.Must(t, libcuda.GraphDestroy(g))
	}
	if !errors.Is(err, sync.ErrCapturing) || !errors.Is(err, libcuda.CUDA_ERROR_CAPTURED_EVENT) {
		t.Fatalf("wait on an event recorded in a capture = %v, want ErrCapturing and CUDA_ERROR_CAPTURED_EVENT", err)
	}
	t.Logf("the capture's end after that: %v", end)
}

// A wait on the per-thread stream from inside its own capture is refused
// with ErrCapturing, and the capture goes on: a query of a capturing stream
// would end it.
func TestWaitOnThePerThreadStreamInItsOwnCaptureIsRefused(t *testing.T) {
	testenv.OnPrimary(t, 0) // locks the thread: the per-thread stream is this thread's
	dev := deviceInts(t, 16)
	var waitErr error
	g, err := graph.Capture(libcuda.CU_STREAM_PER_THREAD, libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, func(s libcuda.Stream) error {
		if err := libcuda.MemsetD32Async(dev, 7, 16, s); err != nil {
			return err
		}
		waitErr = sync.Stream(testenv.Context(t), 0, libcuda.CU_STREAM_PER_THREAD)
		return nil
	})
	if err != nil {
		t.Fatalf("the capture = %v, want it to end well", err)
	}
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	if !errors.Is(waitErr, sync.ErrCapturing) {
		t.Fatalf("wait on the per-thread stream in its capture = %v, want ErrCapturing", waitErr)
	}
}

// IfNoCapture runs its function only while no capture is in progress, and
// a capture waits to begin until the function has returned.
func TestIfNoCaptureHoldsBackCapturesAndIsRefusedDuringOne(t *testing.T) {
	release := make(chan struct{})
	running := make(chan struct{})
	result := make(chan bool)
	go func() {
		ran, err := sync.IfNoCapture(func() error {
			close(running)
			<-release
			return nil
		})
		if err != nil {
			t.Error(err)
		}
		result <- ran
	}()
	testenv.Recv(t, running, "the IfNoCapture function to run")
	entered := make(chan func())
	go func() { entered <- sync.StartCapture().End }()
	select {
	case leave := <-entered:
		leave()
		t.Fatal("StartCapture returned while an IfNoCapture function ran")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if !testenv.Recv(t, result, "IfNoCapture to return") {
		t.Fatal("IfNoCapture did not run its function with no capture in progress")
	}
	var leave func()
	select {
	case leave = <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("StartCapture did not return after the IfNoCapture function did")
	}
	ran, err := sync.IfNoCapture(func() error {
		t.Error("IfNoCapture ran its function during a capture")
		return nil
	})
	if ran || err != nil {
		t.Errorf("IfNoCapture during a capture = %v, %v; want false, nil", ran, err)
	}
	leave()
	if ran, err := sync.IfNoCapture(func() error { return nil }); !ran || err != nil {
		t.Errorf("IfNoCapture after the capture = %v, %v; want true, nil", ran, err)
	}
}
