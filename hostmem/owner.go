package hostmem

import (
	"runtime"
	gosync "sync"
	"sync/atomic"
	"time"
)

// The owner goroutine drives every release after Free: it holds the
// uses being waited for (queue.go), the context-wide waits (ctxwait.go)
// and the unregister batches (batch.go), and nothing else touches them.
// Buffer methods, the results of its own helpers and the requests of
// Wait, Trim and Drain reach it through the inbox, a small locked box
// that no one holds across a driver call; the owner makes its driver
// calls with no lock of the inbox held.
//
// It runs while it has work and exits when it has none (so that a
// drained program has no goroutine of hostmem left); the next piece of
// work starts it again. Its state (own) outlives it, so that a steady
// loop of releases reuses its room.
var inbox struct {
	mu      gosync.Mutex
	running bool // an owner goroutine runs
	freed   []*state
	ctxDone []ctxResult
	retry   []ctxKey   // context waits postponed until captures ended
	batched int        // registrations the finished batch ended, -1 for none
	trims   []chan int // Trim and Drain requests
	budget  bool       // registrations were retired elsewhere: check the retired budget

	pending   int           // releases from Free to retired or failed
	postponed int           // releases whose context wait waits for captures to end
	hurry     int           // Waits waiting: the owner polls fast
	sleeping  bool          // the owner sleeps until woken: no uses to poll
	changed   chan struct{} // closed and replaced when pending drops while watched
	watched   bool
}

// wake shortens the owner's sleep.
var wake = make(chan struct{}, 1)

func init() {
	inbox.changed = make(chan struct{})
	inbox.batched = -1
}

func poke() {
	select {
	case wake <- struct{}{}:
		activity.wakeups.Add(1)
	default:
	}
}

// activity counts what the release machinery does for Stats: event
// queries and the owner's wake-ups, the costs that a loop of releases
// adds to other threads' driver calls.
var activity struct {
	queries, wakeups atomic.Int64
}

// startLocked starts the owner if it is not running; inbox.mu is held.
// It reports whether it did, so that the caller need not poke it.
func startLocked() bool {
	if inbox.running {
		return false
	}
	inbox.running = true
	activity.wakeups.Add(1)
	go ownerLoop()
	return true
}

// handOver gives the owner a freed state; counted says whether it counts
// as pending already (see countPending).
//
// A running owner that polls uses anyway takes it at its next tick: a
// wake-up per Free would make it query far more often behind a busy
// stream. One that sleeps for want of uses to poll is woken.
func handOver(st *state, counted bool) {
	inbox.mu.Lock()
	inbox.freed = append(inbox.freed, st)
	if !counted {
		inbox.pending++
	}
	wakeIt := !startLocked() && inbox.sleeping
	inbox.mu.Unlock()
	if wakeIt {
		poke()
	}
}

// countPending counts a release as pending before its hand-over.
func countPending() {
	inbox.mu.Lock()
	inbox.pending++
	inbox.mu.Unlock()
}

// post runs f on the inbox, locked, and wakes the owner.
func post(f func()) {
	inbox.mu.Lock()
	f()
	started := startLocked()
	inbox.mu.Unlock()
	if !started {
		poke()
	}
}

// finished counts n releases ended (retired or failed).
func finished(n int) {
	if n == 0 {
		return
	}
	inbox.mu.Lock()
	inbox.pending -= n
	if inbox.watched {
		close(inbox.changed)
		inbox.changed = make(chan struct{})
		inbox.watched = false
	}
	inbox.mu.Unlock()
}

// Rounds of the owner. A round queries the events of the pending uses
// (queue.go); each query briefly holds other threads' launches (on the
// H200 a loop of cuEventQuery on one thread raised another thread's launch
// p99 by 60-90%), so rounds run at a bounded rate whatever the rate of the
// Frees: at most one every minTick, doubling up to maxTick while nothing
// completes. A Free never starts a round of its own: a loop that wraps,
// uses and frees as fast as it can, on a stream whose work completes at
// once, made the owner wake, query and sleep again for nearly every cycle
// (0.9 queries a cycle on the simulator), which is a loop of cuEventQuery.
// Its uses now wait for the next tick, and one query of the newest use
// finishes them all. While a Wait waits, the owner polls every hurryTick,
// yielding between, for up to hurryFor after the last progress.
//
// An owner with nothing left to do stays lingerTicks ticks before it
// exits, taking new work at its ticks: a Free meanwhile wakes nobody.
const (
	minTick     = time.Millisecond
	maxTick     = 4 * time.Millisecond
	hurryTick   = 10 * time.Microsecond
	hurryFor    = 2 * time.Millisecond
	lingerTicks = 4
)

// owner is the owner goroutine's state; only the goroutine that holds
// token touches it.
type owner struct {
	queues  map[queueKey]*queue
	spare   [][]waiting // room of deleted queues, for new ones
	scratch roundScratch
	groups  map[ctxKey]*ctxGroup
	batch   batchState
	freed   []*state // the inbox's, swapped
	ctxDone []ctxResult
	retry   []ctxKey

	tick       time.Duration // between rounds: minTick, doubling while nothing completes
	lastRound  time.Time     // when the last round with uses pending began
	mark       uint64        // recordSeq when the last round began (see queue.go)
	yieldUntil time.Time     // while a Wait waits, rounds every hurryTick until then
	quiet      int           // ticks in a row with nothing to do
	timer      *time.Timer   // the owner goroutine's only
}

var own = &owner{
	queues: make(map[queueKey]*queue),
	groups: make(map[ctxKey]*ctxGroup),
	tick:   minTick,
}

func ownerLoop() {
	o := own
	for {
		token.Lock()
		goOn := o.intake(o.quiet > lingerTicks)
		if goOn {
			o.step(time.Now(), false)
		}
		token.Unlock()
		if !goOn {
			return
		}
		o.pause()
	}
}

// token makes the owner's state one goroutine's at a time: the owner
// goroutine's, or for one step a caller's that waits for the owner anyway
// (Wait, Trim), which saves the hand-offs between threads. No driver call
// that blocks is made with it held.
var token gosync.Mutex

// step runs a round if one is due (always: whether or not) and starts a
// batch if one is due; token is held. It reports whether the round made
// progress.
func (o *owner) step(now time.Time, always bool) (progress bool) {
	// A round is due a tick after the last one, or hurryTick after it
	// while a Wait hurries the owner.
	hurried := !always && o.hurried(now)
	every := o.tick
	if hurried {
		every = hurryTick
	}
	if always || !now.Before(o.lastRound.Add(every)) {
		pending := o.usesPending()
		// A round long after the last one targets the newest uses: the
		// mark of the last one says nothing about what may have finished.
		fresh := always || hurried || now.Sub(o.lastRound) > maxTick
		var queried bool
		progress, queried = o.round(fresh)
		if pending {
			// Also when no use was old enough to query: the next round
			// comes a tick later, and finds them older than its mark.
			o.lastRound = now
		}
		if progress {
			o.tick = minTick
			o.yieldUntil = now.Add(hurryFor)
		} else if queried {
			o.tick = min(2*o.tick, maxTick)
		}
	}
	o.runBatches()
	return progress
}

// hurried reports whether a Wait waits and the last progress, or the
// Wait's arrival, is recent; token is held.
func (o *owner) hurried(now time.Time) bool {
	if !now.Before(o.yieldUntil) {
		return false
	}
	inbox.mu.Lock()
	defer inbox.mu.Unlock()
	return inbox.hurry > 0
}

// help runs a round on the caller's goroutine, due or not, if the owner
// is not in one, and reports whether it made progress.
func help() bool {
	if !token.TryLock() {
		return false
	}
	defer token.Unlock()
	o := own
	o.intake(false)
	return o.step(time.Now(), true)
}

// intake takes the inbox's work, or, when stop is set and there is no
// work anywhere, stops the owner; it reports whether the owner goes on.
// token is held.
func (o *owner) intake(stop bool) bool {
	inbox.mu.Lock()
	o.freed, inbox.freed = inbox.freed, o.freed[:0]
	o.ctxDone, inbox.ctxDone = inbox.ctxDone, o.ctxDone[:0]
	o.retry, inbox.retry = inbox.retry, o.retry[:0]
	batched := inbox.batched
	inbox.batched = -1
	o.batch.requests = append(o.batch.requests, inbox.trims...)
	clear(inbox.trims)
	inbox.trims = inbox.trims[:0]
	if inbox.budget {
		inbox.budget = false
		o.batch.check = true
	}
	idle := stop && len(o.freed) == 0 && len(o.ctxDone) == 0 && len(o.retry) == 0 && batched < 0 && o.idle()
	if idle {
		inbox.running = false
	}
	inbox.mu.Unlock()
	if idle {
		o.quiet = 0 // for the next owner
		return false
	}
	if len(o.freed) > 0 {
		o.tick = minTick // new uses: a round a tick after the last
	}
	if batched >= 0 {
		o.batchDone(batched)
	}
	o.takeFreed()
	o.takeContexts()
	return true
}

// idle reports whether the owner has nothing to do or wait for.
func (o *owner) idle() bool {
	return !o.usesPending() && len(o.groups) == 0 && !o.batch.running && !o.batch.wanted()
}

// takeFreed starts the release of each freed state.
func (o *owner) takeFreed() {
	for i, st := range o.freed {
		o.freed[i] = nil
		move(&st.phase, phaseWaiting)
		switch {
		case len(st.uses) > 0:
			o.enqueue(st)
		case st.unknown:
			o.needContext(st)
		default:
			o.retire(st)
		}
	}
	o.freed = o.freed[:0]
}

// afterUses finishes a release whose uses have completed: it retires it,
// or waits for the whole context when some use could not be tracked.
func (o *owner) afterUses(st *state) {
	if st.unknown {
		o.needContext(st)
		return
	}
	o.retire(st)
}

// retire ends a release: its registrations are retired (or dropped) and
// the state serves again.
func (o *owner) retire(st *state) {
	move(&st.phase, phaseRetired)
	if reg.release(st.regs) {
		o.batch.check = true
	}
	st.hold.release()
	st.reuse()
	finished(1)
}

// pause sleeps until the next round is due, or new work comes; while a
// Wait waits and progress is recent, it yields instead. With nothing to
// do, it sleeps a tick at a time, lingerTicks of them, then returns for
// the owner to exit.
func (o *owner) pause() {
	now := time.Now()
	token.Lock()
	idle, pending := o.idle(), o.usesPending()
	hurried := pending && o.hurried(now)
	next := o.lastRound.Add(o.tick)
	if idle {
		o.quiet++
	} else {
		o.quiet = 0
	}
	linger := idle && o.quiet <= lingerTicks
	token.Unlock()
	switch {
	case idle && !linger:
		return // intake stops the owner unless work came meanwhile
	case hurried:
		for end := now.Add(hurryTick); time.Now().Before(end); {
			runtime.Gosched()
		}
		return
	case pending:
		if o.sleep(next.Sub(now)) {
			o.woken()
		}
	case linger:
		// New work is taken at the next tick, unless a message wakes the
		// owner: a Free does not.
		if o.sleep(minTick) {
			o.woken()
		}
	default:
		// Waiting only for messages (batches, context waits): a Free
		// wakes the owner too, which then waits for its round's tick.
		inbox.mu.Lock()
		inbox.sleeping = true
		work := len(inbox.freed) > 0
		inbox.mu.Unlock()
		if !work {
			<-wake // only messages can bring work: no timer
		}
		inbox.mu.Lock()
		inbox.sleeping = false
		inbox.mu.Unlock()
		o.woken()
	}
}

// sleep waits for d or a wake-up, and reports whether it was woken.
func (o *owner) sleep(d time.Duration) bool {
	if d <= 0 {
		return false
	}
	if o.timer == nil {
		o.timer = time.NewTimer(d)
	} else {
		o.timer.Reset(d)
	}
	select {
	case <-o.timer.C:
		return false
	case <-wake:
		o.timer.Stop()
		return true
	}
}

// woken is new work or a Wait: the owner hurries while a Wait waits, and
// polls at the shortest tick.
func (o *owner) woken() {
	token.Lock()
	o.tick = minTick
	o.yieldUntil = time.Now().Add(hurryFor)
	token.Unlock()
}
