package sync_test

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

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

var modes = []sync.Policy{
	{Mode: sync.Auto},
	{Mode: sync.Blocking},
	{Mode: sync.Polling},
}

func TestWaitOnIdleStreamReturnsAtOnce(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	for _, p := range modes {
		if err := p.Stream(testenv.Context(t), 0, s); err != nil {
			t.Errorf("%v: %v", p.Mode, err)
		}
	}
}

func TestWaitReturnsWhenTheWorkEnds(t *testing.T) {
	cu := testenv.PrimaryContext(t, 0)
	for _, p := range modes {
		t.Run(p.Mode.String(), func(t *testing.T) {
			testenv.OnThread(t, cu)
			g := testenv.NewGate(t)
			s := testenv.NewStream(t)
			g.Hold(t, s)
			var e libcuda.Event
			testenv.Must(t, libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
			defer func() { testenv.Must(t, libcuda.EventDestroy(e)) }()
			testenv.Must(t, libcuda.EventRecord(e, s))

			ctx := testenv.Context(t)
			onStream := testenv.WaitAsync(func() error { return p.Stream(ctx, 0, s) })
			onEvent := testenv.WaitAsync(func() error { return p.Event(ctx, e) })
			onContext := testenv.WaitAsync(func() error { return p.Context(ctx, cu) })
			testenv.StillWaiting(t, "stream wait", onStream)
			testenv.StillWaiting(t, "event wait", onEvent)
			testenv.StillWaiting(t, "context wait", onContext)
			g.Open()
			testenv.Finished(t, "stream wait", onStream)
			testenv.Finished(t, "event wait", onEvent)
			testenv.Finished(t, "context wait", onContext)
			testenv.Must(t, libcuda.StreamQuery(s))
		})
	}
}

func TestCancelledWaitReturnsAtOnceAndLeavesTheWorkAlone(t *testing.T) {
	cu := testenv.PrimaryContext(t, 0)
	for _, p := range modes {
		t.Run(p.Mode.String(), func(t *testing.T) {
			testenv.OnThread(t, cu)
			g := testenv.NewGate(t)
			s := testenv.NewStream(t)
			g.Hold(t, s)
			ctx, cancel := context.WithCancel(context.Background())
			ch := testenv.WaitAsync(func() error { return p.Stream(ctx, 0, s) })
			testenv.StillWaiting(t, "stream wait", ch)
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
			g.Open()
			testenv.Finished(t, "a new wait", testenv.WaitAsync(func() error { return p.Stream(context.Background(), 0, s) }))
		})
	}
}

func TestLegacyStreamWaitNeedsItsContext(t *testing.T) {
	cu := testenv.PrimaryContext(t, 0)
	if err := sync.Stream(testenv.Context(t), 0, libcuda.CU_STREAM_LEGACY); err == nil {
		t.Fatal("a legacy stream wait without a context succeeded")
	}
	// From a goroutine with no context current on its thread.
	done := testenv.WaitAsync(func() error { return sync.Stream(context.Background(), cu, libcuda.CU_STREAM_LEGACY) })
	testenv.Finished(t, "legacy stream wait", done)
}

// A legacy stream wait is for that stream only: work held on a
// non-blocking stream of the context does not hold it, work held on the
// legacy stream does.
func TestLegacyStreamWaitIsForThatStreamOnly(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	other := testenv.NewStream(t)
	held := testenv.NewGate(t)
	held.Hold(t, other)
	wait := func() error { return sync.Stream(context.Background(), cu, libcuda.CU_STREAM_LEGACY) }
	testenv.Finished(t, "legacy stream wait beside a held non-blocking stream", testenv.WaitAsync(wait))
	g := testenv.NewGate(t)
	g.Hold(t, libcuda.CU_STREAM_LEGACY)
	ch := testenv.WaitAsync(wait)
	testenv.StillWaiting(t, "legacy stream wait on the held legacy stream", ch)
	g.Open()
	testenv.Finished(t, "legacy stream wait", ch)
	held.Open()
}

func TestPerThreadStreamWaitIsForTheCallersThread(t *testing.T) {
	testenv.OnPrimary(t, 0) // the test holds LockOSThread from submission to wait
	g := testenv.NewGate(t)
	g.Hold(t, libcuda.CU_STREAM_PER_THREAD)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := sync.Stream(ctx, 0, libcuda.CU_STREAM_PER_THREAD); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait on a held per-thread stream = %v, want the deadline", err)
	}
	g.Open()
	testenv.Must(t, sync.Stream(testenv.Context(t), 0, libcuda.CU_STREAM_PER_THREAD))
	// Work held on a non-blocking stream does not hold the wait: it is for
	// the per-thread stream only, not the whole context.
	other := testenv.NewStream(t)
	h := testenv.NewGate(t)
	h.Hold(t, other)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := sync.Stream(ctx2, 0, libcuda.CU_STREAM_PER_THREAD); err != nil {
		t.Fatalf("wait on the idle per-thread stream beside a held stream = %v, want nil", err)
	}
	h.Open()
}

func TestThousandsOfWaitersCompleteWithBoundedThreads(t *testing.T) {
	testenv.OnPrimary(t, 0)
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
		streams[i] = testenv.NewStream(t)
	}
	g := testenv.NewGate(t)
	first := testenv.NewStream(t)
	var held libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&held, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	defer func() { testenv.Must(t, libcuda.EventDestroy(held)) }()
	g.Hold(t, first)
	testenv.Must(t, libcuda.EventRecord(held, first))
	for _, s := range streams {
		testenv.Must(t, libcuda.StreamWaitEvent(s, held, 0))
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
	g.Open()
	testenv.Recv(t, testenv.Go(wg.Wait), "every waiter")
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
