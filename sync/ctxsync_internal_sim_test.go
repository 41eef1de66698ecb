//go:build !gpu

package sync

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// The two guards that keep a context wait's cuCtxSynchronize from entering
// the driver while a capture is in progress (see ctxsync.go), each tested
// on its own. Without either, the simulator refuses the call (900) and
// invalidates the capture at once: the tests fail on its counters, they
// do not hang.

// ctxSyncGuardSetup holds a stream of cu busy until the test ends and
// returns another stream to capture and device memory to capture a memset
// into.
func ctxSyncGuardSetup(t *testing.T) (cu libcuda.Context, s libcuda.Stream, dev libcuda.Deviceptr, gate *testenv.Gate) {
	cu = testenv.OnPrimary(t, 0)
	testenv.Must(t, libcuda.MemAlloc(&dev, 64))
	testenv.Fenced(t, func() { testenv.Must(t, libcuda.MemFree(dev)) })
	busy := testenv.NewStream(t)
	s = testenv.NewStream(t)
	gate = testenv.NewGate(t)
	gate.Hold(t, busy)
	return cu, s, dev, gate
}

// A context wait's helper that reaches its cuCtxSynchronize while a
// registered capture is in progress makes no driver call: admitSync
// refuses it, and the wait returns an ErrCapturing error.
func TestAContextSynchronizeIsNotAdmittedDuringACapture(t *testing.T) {
	cu, s, dev, _ := ctxSyncGuardSetup(t)
	invalidated := testenv.SimStat(t, "captures_invalidated")
	calls := testenv.SimStat(t, "ctx_synchronize_calls")
	entry := StartCapture()
	t.Cleanup(entry.End)
	testenv.Must(t, libcuda.StreamBeginCapture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL))
	testenv.Must(t, libcuda.MemsetD8Async(dev, 1, 64, s))
	// What a helper runs once Context has handed it the wait: Context's
	// own check of the captures in progress came before this capture.
	err := contextTarget(cu).block()
	var g libcuda.Graph
	endErr := libcuda.StreamEndCapture(s, &g)
	if g != 0 {
		testenv.Must(t, libcuda.GraphDestroy(g))
	}
	entry.End()
	if !errors.Is(err, ErrCapturing) {
		t.Errorf("a context synchronize during a registered capture: %v; want an ErrCapturing error", err)
	}
	if n := testenv.SimStat(t, "ctx_synchronize_calls") - calls; n != 0 {
		t.Errorf("%d cuCtxSynchronize calls made during the capture", n)
	}
	if endErr != nil {
		t.Errorf("the capture's end: %v", endErr)
	}
	if n := testenv.SimStat(t, "captures_invalidated") - invalidated; n != 0 {
		t.Errorf("%d captures invalidated", n)
	}
}

// A capture that starts while a context wait's cuCtxSynchronize has been
// admitted but has not reached the driver waits for it: held here between
// the two (syncHook) until the capture start waits, the call reaches the
// simulator while no capture is active, and the capture begins only once
// its wait is over (here: the entry bound, wide for the test, is shortened
// once the call is in the driver). The capture then ends valid while the
// call is still blocked on a busy stream, and the call returns success.
func TestACaptureStartWaitsForAContextSynchronizeToReachTheDriver(t *testing.T) {
	cu, s, dev, gate := ctxSyncGuardSetup(t)
	setEntry := func(d time.Duration) {
		reg.mu.Lock()
		ctxSyncEntry = d
		reg.cond.Broadcast()
		reg.mu.Unlock()
	}
	setEntry(time.Hour) // only the test lets the capture go past the call
	t.Cleanup(func() { setEntry(defaultCtxSyncEntry) })
	invalidated := testenv.SimStat(t, "captures_invalidated")
	calls := testenv.SimStat(t, "ctx_synchronize_calls")

	var began atomic.Bool
	hook := func() {
		// Hold the call until the capture start waits for it, or the
		// capture has begun (the guard is gone), or the test gives up.
		deadline := time.Now().Add(testenv.Timeout)
		for time.Now().Before(deadline) && !began.Load() {
			reg.mu.Lock()
			waiting := reg.syncWaiters > 0
			reg.mu.Unlock()
			if waiting {
				return
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	syncHook.Store(&hook)
	t.Cleanup(func() { syncHook.Store(nil) })
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	waited := testenv.WaitAsync(func() error { return Context(ctx, cu) })
	testenv.Eventually(t, "the context synchronize admitted", func() bool { return ReadStats().ContextSyncs == 1 })

	captured := testenv.WaitAsync(func() error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := libcuda.CtxSetCurrent(cu); err != nil {
			return err
		}
		entry := StartCapture()
		defer entry.End()
		if err := libcuda.StreamBeginCapture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL); err != nil {
			return err
		}
		began.Store(true)
		err := libcuda.MemsetD8Async(dev, 1, 64, s)
		var g libcuda.Graph
		err = errors.Join(err, libcuda.StreamEndCapture(s, &g))
		if g != 0 {
			err = errors.Join(err, libcuda.GraphDestroy(g))
		}
		return err
	})
	testenv.WaitStat(t, "the context synchronize in the simulator", "ctx_synchronize_calls", calls)
	if began.Load() {
		t.Fatal("the capture began while the context synchronize was admitted but not in the driver")
	}
	reg.mu.Lock()
	waiting := reg.syncWaiters
	reg.mu.Unlock()
	if waiting != 1 {
		t.Fatalf("%d capture starts wait for the context synchronize, want 1", waiting)
	}
	setEntry(0) // the call is in the driver: the capture may begin
	if err := testenv.Recv(t, captured, "the capture beside the blocked context synchronize"); err != nil {
		t.Fatalf("capture beside the context synchronize: %v", err)
	}
	testenv.StillWaiting(t, "the context wait", waited)
	gate.Open()
	testenv.Finished(t, "the context wait", waited)
	if n := testenv.SimStat(t, "captures_invalidated") - invalidated; n != 0 {
		t.Fatalf("%d captures invalidated", n)
	}
}
