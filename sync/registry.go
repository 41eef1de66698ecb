package sync

import (
	"context"
	"fmt"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/purecuda/purecuda/libcuda"
)

// The registry of captures in progress: the one place that knows them.
// Package graph registers every capture it makes, hostmem reads it, and
// this package's waits consult it before each potentially unsafe call.
//
// It has four parts, all guarded by reg.mu except the word (state) that
// the hot path reads:
//
//   - state packs three counts into one 64-bit word: the captures admitted
//     (StartCapture returned) and not ended, and this package's
//     potentially unsafe driver calls made in the caller's own mode, in
//     flight, in two kinds: quick queries, whose number also bounds the
//     threads that waiters hold (guardedQuery), and longer calls
//     (IfNoCapture) that the bound must not count. A call
//     adds its unit and reads, in the value that the same addition
//     returns, whether a capture is admitted; StartCapture adds its unit
//     and then waits, on a condition, until both in-flight counts are
//     zero. Both are read-modify-writes of one word, so one of the two
//     always comes after the other and sees it: no such call overlaps an
//     admitted capture, and a call pays one atomic addition to enter and
//     one to leave. A capture start blocks instead of spinning while calls
//     are in flight; the last call to leave signals the condition.
//   - syncs are the cuCtxSynchronize calls in flight (Context's), each
//     with the moment it was admitted; see ctxsync.go. They are admitted
//     and counted under reg.mu, as StartCapture counts a capture, so one
//     of the two always sees the other. A capture start waits for each
//     of them only until it has been in flight for ctxSyncEntry.
//   - byID finds a begun capture by the driver's capture id (or by the
//     stream it began on), with the value its maker attached.
//   - the queue of postponed work, which runs on one goroutine while no
//     capture is admitted or entering; a capture that starts meanwhile
//     waits for the running function to return.
var (
	state paddedUint64
	// relaxedQueries counts guardedQuery's limited queries in flight in
	// relaxed mode (those in the caller's mode are counted in state).
	relaxedQueries atomic.Int32

	captureWakeups atomic.Int64 // times a StartCapture woke while waiting for calls in flight
)

// paddedUint64 is an atomic word alone in its cache line(s): the word that
// every wait adds to twice shares no line with a counter that another
// core writes (the linker had put the poller's counters beside it), so
// that an uncontended addition stays a hit in the core's own cache.
type paddedUint64 struct {
	_ [64]byte
	atomic.Uint64
	_ [56]byte
}

// The fields of state, and what bounds them.
//
//   - Quick queries (2^24-1): a goroutine counts from its addition to its
//     driver call's return, so the count is the goroutines in or about to
//     make a query: at most GOMAXPROCS of the limited ones pass, plus the
//     shared poller and EventDone and per-thread queries, each inside a
//     driver call on an OS thread of its own (the runtime stops the
//     program at 10,000 threads unless told otherwise).
//   - Longer calls (2^20-1): IfNoCapture's functions, again each on a
//     thread of its own in this package and
//     in graph and hostmem (a user's IfNoCapture function could block
//     in Go instead). Past the field, the carry reads as a capture
//     admitted until the call leaves: IfNoCapture declines and queries go
//     relaxed, but a StartCapture meanwhile would see no call in flight.
//   - Captures (maxCaptures): counted from StartCapture to End, which
//     goroutines waiting in StartCapture can reach without the driver's
//     streams to capture; StartCapture therefore waits while the field is
//     full (the top field has nowhere to carry: past it, the count would
//     read zero and every query would run in the caller's mode).
const (
	queryUnit    uint64 = 1       // bits 0-23: quick queries in flight
	callUnit     uint64 = 1 << 24 // bits 24-43: longer calls in flight
	captureUnit  uint64 = 1 << 44 // bits 44-63: captures admitted
	queryMask           = callUnit - 1
	inflightMask        = captureUnit - 1
	maxCaptures         = 1<<20 - 1
)

var reg = struct {
	mu       gosync.Mutex
	cond     gosync.Cond // signalled when inflight drops to zero or a postponed function ends
	entering int         // StartCapture calls waiting for a postponed function
	running  bool        // a postponed function runs
	runner   bool        // the goroutine that runs the queue is started
	queue    []func()
	idle     chan struct{} // closed when the queue is empty and nothing runs; nil until WaitPostponed asks
	byID     map[uint64]*CaptureEntry
	syncs    []*ctxSync  // cuCtxSynchronize calls in flight, oldest first
	timer    *time.Timer // wakes captures waiting for a sync's entry bound
	// syncWaiters are the StartCapture calls waiting for the entry bound
	// of a cuCtxSynchronize in flight.
	syncWaiters int
}{byID: map[uint64]*CaptureEntry{}}

func init() { reg.cond.L = &reg.mu }

// CaptureEntry is the registration of one capture, from StartCapture to
// End.
type CaptureEntry struct {
	id     uint64
	stream libcuda.Stream
	value  any
	begun  bool
	ended  atomic.Bool
	// admitted is set by StartCapture: only such an entry is counted in
	// state, and only its End subtracts it.
	admitted bool
}

// StartCapture registers a stream capture that is about to begin and
// returns its entry; call End once the capture has ended, whether it
// succeeded or not (End also when the capture never began). It returns
// when no postponed function is running and no driver call that this
// package made outside relaxed mode is in flight, except a context wait's
// cuCtxSynchronize that has been in flight for ctxSyncEntry already (it is
// inside the driver, where it harms no capture begun after it): it blocks
// (it never spins) until then, so begin the capture after it returns. It
// also waits while 2^20-1 captures are registered already, until one
// ends.
func StartCapture() *CaptureEntry { return StartCaptureWith(new(CaptureEntry)) }

// StartCaptureWith is StartCapture for a caller that makes its captures
// one after another and reuses one entry for them, so that a capture
// allocates nothing here (package graph's Cached): it starts the
// registration of a capture in e and returns e. An entry still in
// progress (Started and not Ended) is ended first.
func StartCaptureWith(e *CaptureEntry) *CaptureEntry {
	e.End()
	*e = CaptureEntry{}
	e.start()
	e.admitted = true
	return e
}

// start waits, as StartCapture says, and counts a capture admitted.
func (*CaptureEntry) start() {
	reg.mu.Lock()
	reg.entering++
	for reg.running || CapturesInProgress() >= maxCaptures {
		reg.cond.Wait()
	}
	reg.entering--
	state.Add(captureUnit)
	for {
		if state.Load()&inflightMask != 0 {
			reg.cond.Wait()
			captureWakeups.Add(1)
			continue
		}
		if len(reg.syncs) == 0 { // the common case: no clock read
			break
		}
		d := syncEntryLeftLocked(time.Now())
		if d <= 0 {
			break
		}
		armSyncTimerLocked(d)
		reg.syncWaiters++
		reg.cond.Wait()
		reg.syncWaiters--
		captureWakeups.Add(1)
	}
	if len(reg.syncs) > 0 {
		capturesPastSyncs.Add(1)
	}
	reg.mu.Unlock()
}

// Begun makes the capture findable by LookupCapture under the driver's
// capture id and the stream it began on, with value attached. It does
// nothing for an entry that StartCapture did not return (nil, the zero
// value) or that has ended.
func (c *CaptureEntry) Begun(id uint64, s libcuda.Stream, value any) {
	if c == nil || !c.admitted {
		return
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if c.ended.Load() {
		return
	}
	c.id, c.stream, c.value, c.begun = id, s, value, true
	reg.byID[id] = c
}

// End ends the registration; calls after the first do nothing, and so
// does End of an entry that StartCapture did not return (nil, the zero
// value). When it was the last capture in progress, the postponed work
// starts.
func (c *CaptureEntry) End() {
	if c == nil || !c.admitted || c.ended.Swap(true) {
		return
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if c.begun && reg.byID[c.id] == c {
		delete(reg.byID, c.id)
	}
	if state.Add(^(captureUnit-1))/captureUnit == maxCaptures-1 { // less one capture
		reg.cond.Broadcast() // a StartCapture may wait for the field
	}
	startRunnerLocked()
}

// LookupCapture returns the value attached to the begun capture with the
// driver's capture id id, or else to the one begun on stream s (an
// invalidated capture may not tell its id).
func LookupCapture(id uint64, s libcuda.Stream) (value any, ok bool) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if c := reg.byID[id]; c != nil {
		return c.value, true
	}
	for _, c := range reg.byID {
		if c.stream == s {
			return c.value, true
		}
	}
	return nil, false
}

// EnterCapture is StartCapture for callers that need only the end: it
// returns the entry's End.
//
// Deprecated: use StartCapture().End.
func EnterCapture() (leave func()) { return StartCapture().End }

// CapturesInProgress returns the number of captures registered (admitted
// by StartCapture) and not ended yet.
func CapturesInProgress() int { return int(state.Load() / captureUnit) }

// enter counts a potentially unsafe call (unit: queryUnit or callUnit) in
// flight and returns the word after: the call may be made in the caller's
// own capture mode when no capture is admitted (the word is below
// captureUnit). Either way the caller must call leave(unit) afterwards.
func enter(unit uint64) uint64 { return state.Add(unit) }

// leave ends a call counted by enter; the last one out wakes the captures
// waiting to start.
func leave(unit uint64) {
	if n := state.Add(-unit); n&inflightMask == 0 && n >= captureUnit {
		wakeCaptures()
	}
}

// wakeCaptures wakes the captures that wait in StartCapture for the calls
// in flight to end.
func wakeCaptures() {
	reg.mu.Lock()
	reg.cond.Broadcast()
	reg.mu.Unlock()
}

// fast reports whether a longer potentially unsafe call may be made in
// the caller's own capture mode; if so the caller must call done
// afterwards.
func fast() bool {
	if enter(callUnit) < captureUnit {
		return true
	}
	leave(callUnit)
	return false
}

// done ends a call that fast admitted.
func done() { leave(callUnit) }

// Postpone queues f to run once no registered capture is in progress.
// Queued functions run in order, one at a time, on a goroutine of this
// package; when nothing is capturing, f starts at once on that goroutine,
// after the functions queued before it. While a postponed function runs,
// captures wait in StartCapture before they begin, so f may make calls
// that would invalidate a capture, cuCtxSynchronize included. The queue
// is started by the end of the last capture: nothing polls. WaitPostponed
// (and graph.Drain) waits for the queued functions.
//
// f must not start a capture, nor wait for a goroutine that does.
func Postpone(f func()) {
	if f == nil {
		return
	}
	reg.mu.Lock()
	reg.queue = append(reg.queue, f)
	startRunnerLocked()
	reg.mu.Unlock()
}

// WaitPostponed waits until no function queued by Postpone is waiting or
// running, which happens only once no capture is in progress; functions
// that postponed functions queue in turn are waited for too. It returns
// ctx's error, wrapped, if ctx ends first.
func WaitPostponed(ctx context.Context) error {
	reg.mu.Lock()
	if len(reg.queue) == 0 && !reg.running {
		reg.mu.Unlock()
		return nil
	}
	if reg.idle == nil {
		reg.idle = make(chan struct{})
	}
	idle := reg.idle
	n := len(reg.queue)
	reg.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sync: WaitPostponed: %d postponed functions waiting, %d captures in progress: %w", n, CapturesInProgress(), ctx.Err())
	}
}

func startRunnerLocked() {
	if CapturesInProgress() == 0 && reg.entering == 0 && !reg.runner && len(reg.queue) > 0 {
		reg.runner = true
		go runPostponed()
	}
}

// runPostponed runs the queue until it is empty or a capture wants to
// start.
func runPostponed() {
	reg.mu.Lock()
	for CapturesInProgress() == 0 && reg.entering == 0 && len(reg.queue) > 0 {
		f := reg.queue[0]
		reg.queue[0] = nil
		reg.queue = reg.queue[1:]
		reg.running = true
		reg.mu.Unlock()
		runOne(f)
		reg.mu.Lock()
	}
	if len(reg.queue) == 0 {
		reg.queue = nil
	}
	reg.runner = false
	reg.mu.Unlock()
}

// runOne runs one postponed function and marks it done, also when it
// panics (the panic goes on and ends the program, as any goroutine's does).
func runOne(f func()) {
	defer func() {
		reg.mu.Lock()
		reg.running = false
		reg.cond.Broadcast()
		if len(reg.queue) == 0 && reg.idle != nil {
			close(reg.idle)
			reg.idle = nil
		}
		reg.mu.Unlock()
	}()
	f()
}
