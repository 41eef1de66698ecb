package sync

import (
	gosync "sync"
	"sync/atomic"

	"github.com/purecuda/purecuda/libcuda"
)

// The registry of captures in progress: the one place that knows them.
// Package graph registers every capture it makes, hostmem reads it, and
// this package's waits consult it before each potentially unsafe call.
//
// It has three parts, all guarded by reg.mu except the two counters that
// the hot path reads:
//
//   - captures counts the captures admitted (StartCapture returned) and
//     not ended; inflight counts this package's potentially unsafe driver
//     calls made in the caller's own mode. A call raises inflight and then
//     checks captures; StartCapture raises captures and then waits, on a
//     condition, until inflight is zero. With sequentially consistent
//     atomics one of the two always sees the other, so no such call
//     overlaps an admitted capture; and a capture start blocks instead of
//     spinning while calls are in flight. The last call to leave signals
//     the condition.
//   - byID finds a begun capture by the driver's capture id (or by the
//     stream it began on), with the value its maker attached.
//   - the queue of postponed work, which runs on one goroutine while no
//     capture is admitted or entering; a capture that starts meanwhile
//     waits for the running function to return.
var (
	captures atomic.Int64
	inflight atomic.Int32
	queries  atomic.Int32 // guardedQuery's limited queries in flight, in any mode

	captureWakeups atomic.Int64 // times a StartCapture woke while waiting for calls in flight
)

var reg = struct {
	mu       gosync.Mutex
	cond     gosync.Cond // signalled when inflight drops to zero or a postponed function ends
	entering int         // StartCapture calls waiting for a postponed function
	running  bool        // a postponed function runs
	runner   bool        // the goroutine that runs the queue is started
	queue    []func()
	byID     map[uint64]*CaptureEntry
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
}

// StartCapture registers a stream capture that is about to begin and
// returns its entry; call End once the capture has ended, whether it
// succeeded or not (End also when the capture never began). It returns
// when no postponed function is running and no driver call that this
// package made outside relaxed mode is in flight: it blocks (it never
// spins) until then, so begin the capture after it returns.
func StartCapture() *CaptureEntry {
	reg.mu.Lock()
	reg.entering++
	for reg.running {
		reg.cond.Wait()
	}
	reg.entering--
	captures.Add(1)
	for inflight.Load() != 0 {
		reg.cond.Wait()
		captureWakeups.Add(1)
	}
	reg.mu.Unlock()
	return &CaptureEntry{}
}

// Begun makes the capture findable by LookupCapture under the driver's
// capture id and the stream it began on, with value attached.
func (c *CaptureEntry) Begun(id uint64, s libcuda.Stream, value any) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if c.ended.Load() {
		return
	}
	c.id, c.stream, c.value, c.begun = id, s, value, true
	reg.byID[id] = c
}

// End ends the registration; calls after the first do nothing. When it
// was the last capture in progress, the postponed work starts.
func (c *CaptureEntry) End() {
	if c.ended.Swap(true) {
		return
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if c.begun && reg.byID[c.id] == c {
		delete(reg.byID, c.id)
	}
	captures.Add(-1)
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
func EnterCapture() (leave func()) { return StartCapture().End }

// CapturesInProgress returns the number of captures registered (admitted
// by StartCapture or EnterCapture) and not ended yet.
func CapturesInProgress() int { return int(captures.Load()) }

// fast reports whether a potentially unsafe call may be made in the
// caller's own capture mode; if so the caller must call done afterwards.
func fast() bool {
	inflight.Add(1)
	if captures.Load() == 0 {
		return true
	}
	done()
	return false
}

// done ends a call that fast admitted; the last one out wakes the
// captures waiting to start.
func done() {
	if inflight.Add(-1) == 0 && captures.Load() > 0 {
		reg.mu.Lock()
		reg.cond.Broadcast()
		reg.mu.Unlock()
	}
}

// Postpone queues f to run once no registered capture is in progress.
// Queued functions run in order, one at a time, on a goroutine of this
// package; when nothing is capturing, f starts at once on that goroutine,
// after the functions queued before it. While a postponed function runs,
// captures wait in StartCapture before they begin, so f may make calls
// that would invalidate a capture, cuCtxSynchronize included. The queue
// is started by the end of the last capture: nothing polls.
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

func startRunnerLocked() {
	if captures.Load() == 0 && reg.entering == 0 && !reg.runner && len(reg.queue) > 0 {
		reg.runner = true
		go runPostponed()
	}
}

// runPostponed runs the queue until it is empty or a capture wants to
// start.
func runPostponed() {
	reg.mu.Lock()
	for captures.Load() == 0 && reg.entering == 0 && len(reg.queue) > 0 {
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
		reg.mu.Unlock()
	}()
	f()
}
