package sync

import (
	"slices"
	"sync/atomic"
	"time"
)

// Context waits and captures. cuCtxSynchronize is refused, and invalidates
// the context's captures, when it enters the driver while a capture is in
// progress, in every capture mode. Once inside, blocked on unfinished
// work, it harms no capture begun after it on another thread: the capture
// ends valid and the call returns success (measured on an H200, driver
// 580; see DESIGN.md). The danger is only the moment between this
// package's decision to call it and the driver's own check, which Go
// cannot see. So:
//
//   - a context wait is admitted (admitSync) only while no registered
//     capture is in progress, and counted from then until the call has
//     returned, under reg.mu as StartCapture counts a capture: one of the
//     two sees the other;
//   - a capture that starts while such a call is in flight waits for it
//     (blocked on reg.cond, woken by a timer, never spinning), but only
//     until the call has been in flight for ctxSyncEntry: by then it has
//     passed the driver's check and blocks inside, and the capture begins
//     beside it. A capture therefore never waits longer than ctxSyncEntry
//     behind a context wait, however long the context's work runs.
//
// What is left is the case of a call that takes longer than ctxSyncEntry
// to reach the driver's check: see the package documentation (Contexts).

// ctxSyncEntry bounds how long a capture start waits for a cuCtxSynchronize
// admitted before it: the time the call may take from its admission to
// the driver's check, with a wide margin (the call is a few instructions
// and one foreign call away, microseconds on an idle core). A variable
// (reg.mu) only so that tests can widen it.
var ctxSyncEntry = defaultCtxSyncEntry

const defaultCtxSyncEntry = 10 * time.Millisecond

// ctxSync is one cuCtxSynchronize in flight.
type ctxSync struct{ at time.Time }

var (
	capturesPastSyncs atomic.Int64 // captures admitted while a context wait's call was in flight
	syncsRefused      atomic.Int64 // cuCtxSynchronize calls that the driver refused for a capture
	// syncHook, when set (tests), runs between a context wait's admission
	// and its cuCtxSynchronize: the window that ctxSyncEntry covers.
	syncHook atomic.Pointer[func()]
)

// admitSync admits a cuCtxSynchronize unless a registered capture is in
// progress or starting; the caller must call done on the result after
// the call has returned.
func admitSync() (*ctxSync, bool) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if CapturesInProgress() > 0 {
		return nil, false
	}
	c := &ctxSync{at: time.Now()}
	reg.syncs = append(reg.syncs, c)
	return c, true
}

// done ends c's count and wakes the captures that wait for it.
func (c *ctxSync) done() {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for i, x := range reg.syncs {
		if x == c {
			reg.syncs = slices.Delete(reg.syncs, i, i+1)
			break
		}
	}
	reg.cond.Broadcast()
}

// syncEntryLeftLocked returns how long a capture start must still wait for
// the calls in flight to pass their entry bound: the youngest one's time
// left (the list is in admission order), or 0. reg.mu is held.
func syncEntryLeftLocked(now time.Time) time.Duration {
	if len(reg.syncs) == 0 {
		return 0
	}
	return ctxSyncEntry - now.Sub(reg.syncs[len(reg.syncs)-1].at)
}

// armSyncTimerLocked wakes the captures waiting in StartCapture after d.
// reg.mu is held.
func armSyncTimerLocked(d time.Duration) {
	if reg.timer == nil {
		reg.timer = time.AfterFunc(d, wakeCaptures)
		return
	}
	reg.timer.Reset(d)
}
