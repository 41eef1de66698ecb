package tests

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/pprof"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

var modes = []sync.Policy{
	{Mode: sync.Auto},
	{Mode: sync.Blocking},
	{Mode: sync.Polling},
}

func TestWaitOnIdleStreamReturnsAtOnce(t *testing.T) {
	onPrimary(t, 0)
	s := newStream(t)
	for _, p := range modes {
		if err := p.Stream(context.Background(), 0, s); err != nil {
			t.Errorf("%v: %v", p.Mode, err)
		}
	}
}

// waitAsync starts wait on another goroutine and returns its result channel.
func waitAsync(wait func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- wait() }()
	return ch
}

// stillWaiting checks that ch delivers nothing for a while.
func stillWaiting(t *testing.T, what string, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s returned %v before the work ended", what, err)
	case <-time.After(30 * time.Millisecond):
	}
}

func finished(t *testing.T, what string, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return after the work ended", what)
	}
}

func TestWaitReturnsWhenTheWorkEnds(t *testing.T) {
	cu := primaryContext(t, 0)
	for _, p := range modes {
		t.Run(p.Mode.String(), func(t *testing.T) {
			onThread(t, cu)
			g := newGate(t)
			s := newStream(t)
			g.hold(t, s)
			var e libcuda.Event
			must(t, libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
			defer func() { must(t, libcuda.EventDestroy(e)) }()
			must(t, libcuda.EventRecord(e, s))

			ctx := context.Background()
			onStream := waitAsync(func() error { return p.Stream(ctx, 0, s) })
			onEvent := waitAsync(func() error { return p.Event(ctx, e) })
			onContext := waitAsync(func() error { return p.Context(ctx, cu) })
			stillWaiting(t, "stream wait", onStream)
			stillWaiting(t, "event wait", onEvent)
			stillWaiting(t, "context wait", onContext)
			g.open()
			finished(t, "stream wait", onStream)
			finished(t, "event wait", onEvent)
			finished(t, "context wait", onContext)
			must(t, libcuda.StreamQuery(s))
		})
	}
}

func TestCancelledWaitReturnsAtOnceAndLeavesTheWorkAlone(t *testing.T) {
	cu := primaryContext(t, 0)
	for _, p := range modes {
		t.Run(p.Mode.String(), func(t *testing.T) {
			onThread(t, cu)
			g := newGate(t)
			s := newStream(t)
			g.hold(t, s)
			ctx, cancel := context.WithCancel(context.Background())
			ch := waitAsync(func() error { return p.Stream(ctx, 0, s) })
			stillWaiting(t, "stream wait", ch)
			cancel()
			select {
			case err := <-ch:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("cancelled wait returned %v", err)
				}
			case <-time.After(time.Second):
				t.Fatal("the cancelled wait did not return")
			}
			if err := libcuda.StreamQuery(s); !errors.Is(err, libcuda.CUDA_ERROR_NOT_READY) {
				t.Fatalf("the stream's work was disturbed: query = %v", err)
			}
			g.open()
			finished(t, "a new wait", waitAsync(func() error { return p.Stream(context.Background(), 0, s) }))
		})
	}
}

func TestLegacyStreamWaitNeedsItsContext(t *testing.T) {
	cu := primaryContext(t, 0)
	if err := sync.Stream(context.Background(), 0, libcuda.CU_STREAM_LEGACY); err == nil {
		t.Fatal("a legacy stream wait without a context succeeded")
	}
	// From a goroutine with no context current on its thread.
	done := waitAsync(func() error { return sync.Stream(context.Background(), cu, libcuda.CU_STREAM_LEGACY) })
	finished(t, "legacy stream wait", done)
}

// A legacy stream wait is for that stream only: work held on a
// non-blocking stream of the context does not hold it, work held on the
// legacy stream does.
func TestLegacyStreamWaitIsForThatStreamOnly(t *testing.T) {
	cu := onPrimary(t, 0)
	other := newStream(t)
	held := newGate(t)
	held.hold(t, other)
	wait := func() error { return sync.Stream(context.Background(), cu, libcuda.CU_STREAM_LEGACY) }
	finished(t, "legacy stream wait beside a held non-blocking stream", waitAsync(wait))
	g := newGate(t)
	g.hold(t, libcuda.CU_STREAM_LEGACY)
	ch := waitAsync(wait)
	stillWaiting(t, "legacy stream wait on the held legacy stream", ch)
	g.open()
	finished(t, "legacy stream wait", ch)
	held.open()
}

func TestPerThreadStreamWaitIsForTheCallersThread(t *testing.T) {
	onPrimary(t, 0) // the test holds LockOSThread from submission to wait
	g := newGate(t)
	g.hold(t, libcuda.CU_STREAM_PER_THREAD)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := sync.Stream(ctx, 0, libcuda.CU_STREAM_PER_THREAD); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait on a held per-thread stream = %v, want the deadline", err)
	}
	g.open()
	must(t, sync.Stream(context.Background(), 0, libcuda.CU_STREAM_PER_THREAD))
	// Work held on a non-blocking stream does not hold the wait: it is for
	// the per-thread stream only, not the whole context.
	other := newStream(t)
	h := newGate(t)
	h.hold(t, other)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := sync.Stream(ctx2, 0, libcuda.CU_STREAM_PER_THREAD); err != nil {
		t.Fatalf("wait on the idle per-thread stream beside a held stream = %v, want nil", err)
	}
	h.open()
}

func TestWaitsDuringCaptureAreRefusedAndTheCaptureSurvives(t *testing.T) {
	cu := onPrimary(t, 0)
	busy := newStream(t)
	g := newGate(t)
	g.hold(t, busy)
	captured := newStream(t)
	var dev libcuda.Deviceptr
	must(t, libcuda.MemAlloc(&dev, 64))
	defer func() { must(t, libcuda.MemFree(dev)) }()

	leave := sync.EnterCapture()
	var outside libcuda.Event
	must(t, libcuda.EventCreate(&outside, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	defer func() { must(t, libcuda.EventDestroy(outside)) }()
	must(t, libcuda.EventRecord(outside, busy))

	must(t, libcuda.StreamBeginCapture(captured, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL))
	var graph libcuda.Graph
	ended := false
	endCapture := func() error {
		if ended {
			return nil
		}
		ended = true
		defer leave()
		return libcuda.StreamEndCapture(captured, &graph)
	}
	defer func() {
		if err := endCapture(); err != nil {
			t.Error(err)
		}
	}()
	must(t, libcuda.MemsetD8Async(dev, 0, 64, captured))

	ctx := context.Background()
	// Refused, from another goroutine, with ErrCapturing.
	for what, wait := range map[string]func() error{
		"capturing stream": func() error { return sync.Stream(ctx, 0, captured) },
		"context":          func() error { return sync.Context(ctx, cu) },
	} {
		if err := <-waitAsync(wait); !errors.Is(err, sync.ErrCapturing) {
			t.Errorf("wait on the %s during a capture = %v, want ErrCapturing", what, err)
		}
	}
	// Allowed: another stream and an event recorded outside the capture,
	// busy and then done, from other goroutines.
	ch := waitAsync(func() error { return sync.Stream(ctx, 0, busy) })
	chEvent := waitAsync(func() error { return sync.Event(ctx, outside) })
	stillWaiting(t, "busy stream wait", ch)
	stillWaiting(t, "event wait", chEvent)
	g.open()
	finished(t, "busy stream wait during a capture", ch)
	finished(t, "event wait during a capture", chEvent)

	must(t, endCapture())
	if graph == 0 {
		t.Fatal("the capture ended without a graph")
	}
	must(t, libcuda.GraphDestroy(graph))
}

func TestThousandsOfWaitersCompleteWithBoundedThreads(t *testing.T) {
	onPrimary(t, 0)
	// 200 under -short, which .ci/windows-wine uses: under Wine each
	// stream's thread in the simulator costs tens of milliseconds. Either
	// way the waiters far outnumber the thread bound below.
	n := 1000
	if testing.Short() {
		n = 200
	}
	// Every stream is created first: on the H200, cuStreamCreate blocked
	// for minutes while another stream was held by cuStreamWaitValue32.
	// Then one stream waits on the gate and the others on an event
	// recorded after that, as work waiting on other work does.
	streams := make([]libcuda.Stream, n)
	for i := range streams {
		streams[i] = newStream(t)
	}
	g := newGate(t)
	first := newStream(t)
	var held libcuda.Event
	must(t, libcuda.EventCreate(&held, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	defer func() { must(t, libcuda.EventDestroy(held)) }()
	g.hold(t, first)
	must(t, libcuda.EventRecord(held, first))
	for _, s := range streams {
		must(t, libcuda.StreamWaitEvent(s, held, 0))
	}
	threads := pprof.Lookup("threadcreate").Count()
	var wg gosync.WaitGroup
	var finished atomic.Int32
	errs := make(chan error, n)
	for i, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sync.Stream(context.Background(), 0, s); err != nil {
				errs <- fmt.Errorf("stream %d: %w", i, err)
			}
			finished.Add(1)
		}()
	}
	time.Sleep(50 * time.Millisecond) // all waiting: spinning, polling or blocked
	if f := finished.Load(); f != 0 {
		t.Errorf("%d waits returned while their streams were held", f)
	}
	g.open()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, s := range streams {
		if err := libcuda.StreamQuery(s); err != nil {
			t.Fatalf("stream %d after its wait returned: %v", i, err)
		}
	}
	grown := pprof.Lookup("threadcreate").Count() - threads
	if limit := sync.MaxHelpers + 2*runtime.GOMAXPROCS(0) + 8; grown > limit {
		t.Fatalf("%d waiters made %d OS threads, more than %d", n, grown, limit)
	}
	t.Logf("%d waiters, %d new OS threads", n, grown)
}

// An event recorded in a capture cannot be told apart before it is queried,
// and the driver invalidates the capture when it is (measured on the H200):
// the wait says why it failed.
func TestWaitOnEventRecordedInCaptureSaysCapturing(t *testing.T) {
	onPrimary(t, 0)
	s := newStream(t)
	var dev libcuda.Deviceptr
	must(t, libcuda.MemAlloc(&dev, 64))
	defer func() { must(t, libcuda.MemFree(dev)) }()
	var e libcuda.Event
	must(t, libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	defer func() { must(t, libcuda.EventDestroy(e)) }()

	leave := sync.EnterCapture()
	defer leave()
	must(t, libcuda.StreamBeginCapture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL))
	must(t, libcuda.MemsetD8Async(dev, 0, 64, s))
	must(t, libcuda.EventRecord(e, s))
	err := <-waitAsync(func() error { return sync.Event(context.Background(), e) })
	var g libcuda.Graph
	end := libcuda.StreamEndCapture(s, &g)
	if g != 0 {
		must(t, libcuda.GraphDestroy(g))
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
	onPrimary(t, 0) // locks the thread: the per-thread stream is this thread's
	dev := deviceInts(t, 16)
	var waitErr error
	g, err := graph.Capture(libcuda.CU_STREAM_PER_THREAD, libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, func(s libcuda.Stream) error {
		if err := libcuda.MemsetD32Async(dev, 7, 16, s); err != nil {
			return err
		}
		waitErr = sync.Stream(context.Background(), 0, libcuda.CU_STREAM_PER_THREAD)
		return nil
	})
	if err != nil {
		t.Fatalf("the capture = %v, want it to end well", err)
	}
	must(t, g.Destroy())
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
	<-running
	entered := make(chan func())
	go func() { entered <- sync.EnterCapture() }()
	select {
	case leave := <-entered:
		leave()
		t.Fatal("EnterCapture returned while an IfNoCapture function ran")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if !<-result {
		t.Fatal("IfNoCapture did not run its function with no capture in progress")
	}
	var leave func()
	select {
	case leave = <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("EnterCapture did not return after the IfNoCapture function did")
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
