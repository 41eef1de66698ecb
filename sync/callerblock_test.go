//go:build !gpu

package sync_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// quick makes an Auto wait reach its blocking phase at once.
var quick = sync.Policy{Spin: time.Nanosecond, Yield: time.Nanosecond}

// An Auto wait that nothing can cancel blocks on its own thread, in one
// of the helpers' places (counted as a blocking helper while it does), and
// leaves the thread as it found it: its current context (none here) and
// its capture mode (thread-local here). A wait that can be cancelled goes
// to a helper thread as before.
func TestAnUncancellableWaitBlocksOnItsOwnThread(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	g := testenv.NewGate(t)
	g.Hold(t, s)
	before := sync.ReadStats()
	type thread struct {
		cur  libcuda.Context
		mode libcuda.StreamCaptureMode
	}
	res := make(chan error, 1)
	after := make(chan thread, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := libcuda.CtxSetCurrent(0); err != nil {
			res <- err
			return
		}
		mode := libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
		if err := libcuda.ThreadExchangeStreamCaptureMode(&mode); err != nil {
			res <- err
			return
		}
		err := quick.Stream(context.Background(), 0, s)
		var th thread
		if e := libcuda.CtxGetCurrent(&th.cur); e != nil && err == nil {
			err = e
		}
		th.mode = mode // put it back, reading what the wait left
		if e := libcuda.ThreadExchangeStreamCaptureMode(&th.mode); e != nil && err == nil {
			err = e
		}
		after <- th
		res <- err
	}()
	testenv.Eventually(t, "the wait blocking in the driver", func() bool { return sync.ReadStats().BlockingHelpers == before.BlockingHelpers+1 })
	if st := sync.ReadStats(); st.HelperThreads > before.HelperThreads {
		t.Errorf("an uncancellable wait started a helper thread: %+v, before %+v", st, before)
	}
	g.Open()
	if err := testenv.Recv(t, res, "the uncancellable wait"); err != nil {
		t.Fatalf("the wait: %v", err)
	}
	th := <-after
	if th.cur != 0 || th.mode != libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL {
		t.Errorf("after the wait the thread had context %#x and capture mode %v; want none and thread-local, as before it", uintptr(th.cur), th.mode)
	}
	st := sync.ReadStats()
	if st.CallerBlocks != before.CallerBlocks+1 || st.ActiveHelpers != before.ActiveHelpers {
		t.Errorf("after the wait: %d waits blocked on their own thread (before %d), %d active helpers (before %d); want one more, and as many",
			st.CallerBlocks, before.CallerBlocks, st.ActiveHelpers, before.ActiveHelpers)
	}

	// A cancellable wait: a helper, not the caller's thread.
	g2 := testenv.NewGate(t)
	g2.Hold(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := testenv.WaitAsync(func() error { return quick.Stream(ctx, 0, s) })
	testenv.Eventually(t, "the cancellable wait blocking in the driver", func() bool { return sync.ReadStats().BlockingHelpers == before.BlockingHelpers+1 })
	g2.Open()
	if err := testenv.Recv(t, done, "the cancellable wait"); err != nil {
		t.Fatalf("the cancellable wait: %v", err)
	}
	if n := sync.ReadStats().CallerBlocks; n != st.CallerBlocks {
		t.Errorf("a cancellable wait blocked on its own thread (%d, was %d)", n, st.CallerBlocks)
	}
}

// Uncancellable waits block in the driver in the helpers' places only:
// however many wait at once, at most MaxHelpers block there, the others
// wait on the shared poller, and all finish.
func TestAnUncancellableWaitTakesAHelpersPlace(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	g := testenv.NewGate(t)
	g.Hold(t, s)
	before := sync.ReadStats()
	const n = sync.MaxHelpers + 2
	var waits []<-chan error
	for range n {
		waits = append(waits, testenv.WaitAsync(func() error { return quick.Stream(context.Background(), 0, s) }))
	}
	// Each wait ends up blocking in the driver or on the poller (which
	// one depends on the spin slots and the places free when it gets
	// there).
	var st sync.Stats
	testenv.Eventually(t, "every wait blocking or polled", func() bool {
		st = sync.ReadStats()
		return st.BlockingHelpers-before.BlockingHelpers+st.PolledWaits-before.PolledWaits == n
	})
	if b := st.BlockingHelpers - before.BlockingHelpers; b > sync.MaxHelpers {
		t.Errorf("%d waits blocking in the driver, past MaxHelpers (%d)", b, sync.MaxHelpers)
	}
	g.Open()
	for i, w := range waits {
		if err := testenv.Recv(t, w, "a wait"); err != nil {
			t.Errorf("wait %d: %v", i, err)
		}
	}
}
