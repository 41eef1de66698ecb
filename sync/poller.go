package sync

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/purecuda/purecuda/libcuda"
)

// The shared poller: one goroutine that queries, in rounds, every target
// that waits are polled for, and wakes each wait by its channel. Every
// wait that is past its own spinning and has no helper thread (all
// MaxHelpers busy, Polling mode, or a helper that failed) waits here, so
// that the queries, the wake-ups and the CPU they cost do not grow with
// one timer per wait: a round makes one query per distinct target, however
// many waits are on it.
//
// The poller also spins for the waits that do not spin on their own:
// while a wait that joined it without spinning (see wait: every spin slot
// was taken, or the poller was spinning already) is within its Spin and
// Yield budgets, it runs its rounds back to back, yielding between them,
// one goroutine instead of one each, with a wake-up as quick as a lone
// spinning wait's for as long as its round is short. While it does so
// (pollerSpins), no new wait spins on its own and the waits spinning in
// their slots join it: the CPU that many waits spend while they start is
// one goroutine's. A wait that joins so while the poller sleeps wakes it
// (a kick): its first round comes at once, not after the sleep.
//
// Completions come together (one host write or one kernel releases many
// waits), so after a round in which some target finished, the next round
// starts at once, and after one in which none did, the sleeps start again
// from pollMinSleep, doubling while nothing finishes, up to pollMaxSleep
// (or its last round's length, when that is longer: a poller with
// thousands of targets queries at most half the time) or the smallest
// Policy.MaxSleep of its waits, whichever is least. A wake-up comes at
// most that sleep and one round after the work ends, which is what one
// thread querying every target round-robin gives, plus the sleep.
//
// Each target found finished hands its waits back at once (their
// goroutines are readied in the round, not at its end). In a round of
// wakerFrom targets or more, the waker goroutine readies them instead,
// beside the round (handOut): readying a goroutine costs about what a
// query does, and 1,000 of them in the poller's own round held up the
// queries of the targets after them (on the H200, 1,000 waiters' median
// wake-up came 420-500µs after the round-robin reference's without the
// waker, 190-360µs with it; at 100 waiters the waker was slower, 110-165µs
// against 80-90µs, hence the threshold). The poller does not yield to the
// woken: a yield after each finished target, meant to run the woken waits
// on the poller's own awake thread, stretched the rounds and put 1,000
// waiters' median wake-up 1.4ms behind the reference's. Being one
// goroutine, the poller never uses more than one core (and the waker
// another while a large round finds targets finished). The poller runs
// only while waits are outstanding: it starts with the first and ends when
// none is left; the waker ends when it has nothing to ready.
//
// Waits join without a lock: each pushes itself on incoming with one
// compare-and-swap and the poller takes them all with one swap (1,000
// waits starting at once had queued on the poller's mutex).
//
// The sleeps are the poller's own (see sleeper), not the runtime's timers:
// on Linux the runtime waits for timers in epoll_wait, whose timeout is in
// milliseconds, so a 100µs timer in a process with nothing else to do
// fires after about 1.1ms (measured), and a polled wake-up came up to that
// late (issue 29). The poller sleeps in the kernel instead, with its
// thread's timer slack at 1ns for the sleep.
//
// Its queries are guardedQuery's: counted in flight for StartCapture, and
// made in relaxed mode while a capture is in progress. A target being
// captured (ErrCapturing) or any other error ends the waits on it with
// that error, as a wait's own query would.

// pollMaxSleep caps the poller's sleep between rounds, unless its last
// round took longer.
const pollMaxSleep = 100 * time.Microsecond

// pollSleepFor, when not zero, is how long every sleep of the poller lasts
// (tests set it).
var pollSleepFor atomic.Int64

// pollMinSleep is the poller's first sleep after a round in which some
// target finished.
const pollMinSleep = time.Microsecond

// nextSleep is the poller's sleep after a round in which nothing finished
// and no wait is within its spinning budgets: prev is the sleep before
// it (0 after a round in which something finished), busy how long the
// round took and limit the smallest Policy.MaxSleep of its waits.
func nextSleep(prev, busy, limit time.Duration) time.Duration {
	return min(max(2*prev, pollMinSleep), max(pollMaxSleep, busy), limit)
}

// wakerFrom is the number of targets from which a round leaves the
// wake-ups of the waits it finds finished to the waker (see handOut).
const wakerFrom = 128

// The waker: a goroutine that sends the poller's answers to the waits it
// found finished, so that the poller's sweep through its targets does not
// pay for readying each waiting goroutine (see handOut).
var (
	toWake   atomic.Pointer[pollWait] // finished waits to be woken, newest first (linked by link)
	wakerOn  atomic.Bool              // a waker goroutine runs
	draining atomic.Bool              // the poller is in a round that has found a target finished
	// wakerWakes counts the waits the waker has woken since the program
	// started.
	wakerWakes atomic.Int64
)

// handOut has the waker end w, a wait the poller has claimed and found
// finished, with err, and starts the waker when none runs. Only the poller
// calls it.
func handOut(w *pollWait, err error) {
	w.err = err
	push(&toWake, w)
	if !wakerOn.Load() && wakerOn.CompareAndSwap(false, true) {
		go wake()
	}
}

// push puts w on the stack at head, linked by w.link.
func push(head *atomic.Pointer[pollWait], w *pollWait) {
	for {
		old := head.Load()
		w.link = old
		if head.CompareAndSwap(old, w) {
			return
		}
	}
}

// wake is the waker's goroutine: it takes the finished waits from toWake,
// oldest first, and sends each its answer; while the poller's round goes
// on finding targets finished it waits for more (yielding), and it ends
// once there is nothing to send and the round has ended.
func wake() {
	var batch []*pollWait
	for {
		if batch = takeAll(&toWake, batch); len(batch) > 0 {
			for _, w := range batch {
				err := w.err
				w.err = nil
				w.end(err)
			}
			wakerWakes.Add(int64(len(batch)))
			clear(batch)
			continue
		}
		if draining.Load() {
			runtime.Gosched()
			continue
		}
		if retire(&wakerOn, &toWake) {
			return
		}
	}
}

// takeAll empties the stack at head and returns its waits, oldest first,
// in batch (whose array it reuses).
func takeAll(head *atomic.Pointer[pollWait], batch []*pollWait) []*pollWait {
	batch = batch[:0]
	for w := head.Swap(nil); w != nil; {
		next := w.link
		w.link = nil
		batch = append(batch, w)
		w = next
	}
	slices.Reverse(batch)
	return batch
}

// retire clears on, the flag of a goroutine that serves the stack at head
// and has found it empty, and reports whether the goroutine ends: not when
// a wait was pushed meanwhile and the flag could be set again (a push that
// comes after the clearing sees it clear and starts another goroutine).
func retire(on *atomic.Bool, head *atomic.Pointer[pollWait]) bool {
	on.Store(false)
	return head.Load() == nil || !on.CompareAndSwap(false, true)
}

// end gives w the answer of its target, err, and ends it.
func (w *pollWait) end(err error) {
	w.done <- err
	w.state.Store(pollDone)
	polledWaits.Add(-1)
}

// The states of a polled wait. The poller claims a wait (idle → querying)
// before each query of its target and gives it back (querying → idle)
// when the target is not finished; a waiter that leaves claims it for
// good (idle → cancelled), so that no query of its target is made once
// it has left.
const (
	pollIdle int32 = iota
	pollQuerying
	pollCancelled
	pollDone
)

type pollWait struct {
	state    atomic.Int32
	done     chan error // buffered: the poller never blocks on it
	maxSleep time.Duration
	// fresh is when the wait's own spinning would have ended, for a wait
	// that joined without spinning (or cut its spinning short); zero for
	// others. Until then the poller does not sleep.
	fresh time.Time
	// sent is when the poller saw the target finished (mono), written
	// before the send on done.
	sent int64
	// t is what the wait is for, and link the wait below it on
	// poller.incoming, until the poller takes it, then on toWake.
	t    target
	link *pollWait
	// err is the target's answer while the wait is on toWake.
	err error
}

// pollGroup is the waits on one target.
type pollGroup struct {
	t     target
	waits []*pollWait
}

type poller struct {
	// incoming is the stack of waits added since the poller last took
	// them (linked by pollWait.link): a wait joins with one
	// compare-and-swap, and the poller takes all of them with one swap,
	// so that a thousand waits starting at once do not queue on a lock.
	incoming atomic.Pointer[pollWait]
	// running is set while the poller's goroutine runs: whoever sets it
	// (a joining wait, or the poller that finds a wait after it cleared
	// it) runs the poller.
	running atomic.Bool
	// sleeping is set while the poller sleeps between rounds, until a
	// wait that joins without spinning of its own kicks it (clearing it).
	sleeping atomic.Bool
	wake     sleeper
}

// freshJoins counts the waits that joined the poller without spinning
// (fresh) since the program started: a poller about to sleep does not
// when one has joined since its round began.
var freshJoins atomic.Int64

var shared = poller{wake: newSleeper()}

// pollerSpins is set while the poller runs its rounds back to back for
// waits that did not spin on their own: from the moment such a wait
// joins (poller.add) until the poller next sleeps or ends, both under
// poller.mu. New waits then join the poller instead of spinning, and the
// waits spinning in their slots join it too (see wait and spin), which
// read it without the lock.
var pollerSpins paddedBool

// paddedBool is an atomic flag alone in its cache line(s): the spinning
// waits read it between their queries, and a write beside it by another
// core would make each read a miss.
type paddedBool struct {
	_ [64]byte
	atomic.Bool
	_ [63]byte
}

var (
	polledWaits   atomic.Int64 // waits added and not ended (done or cancelled)
	pollerRounds  atomic.Int64 // rounds since the program started
	pollerQueries atomic.Int64 // queries the poller made since the program started
	pollerSleeps  atomic.Int64 // sleeps between rounds since the program started
	pollerSlept   atomic.Int64 // the time those sleeps took, in ns
	pollerKicks   atomic.Int64 // sleeps cut short by a wait that joined
	pollerBusy    atomic.Int64 // the time the rounds took, in ns
	polledWakes   atomic.Int64 // polled waits ended by the poller with their target's answer
	polledWakeNs  atomic.Int64 // the time from the poller's answer to those waits' return, in ns
)

// monoBase is the origin of mono.
var monoBase = time.Now()

// mono is a reading of the monotonic clock in ns, for the counters.
func mono() int64 { return int64(time.Since(monoBase)) }

// add puts a wait on t with the given longest sleep on the poller, and
// starts the poller when it is not running; until fresh (zero for none)
// the poller runs its rounds back to back.
func (p *poller) add(t target, maxSleep time.Duration, fresh time.Time) *pollWait {
	w := &pollWait{done: make(chan error, 1), maxSleep: maxSleep, fresh: fresh, t: t}
	polledWaits.Add(1)
	push(&p.incoming, w)
	// After the push: a poller that clears running before this finds the
	// wait when it looks again (see run).
	if !p.running.Load() && p.running.CompareAndSwap(false, true) {
		go p.run()
	}
	if !fresh.IsZero() {
		freshJoins.Add(1)
		if !pollerSpins.Load() {
			pollerSpins.Store(true)
		}
		// After the count: a poller going to sleep either sees the count
		// changed or has set sleeping already, and is kicked.
		if p.sleeping.Load() && p.sleeping.Swap(false) {
			pollerKicks.Add(1)
			p.wake.kick()
		}
	}
	return w
}

// sleep sleeps for d between rounds, or until a wait that joins without
// spinning kicks it; it does not sleep at all when such a wait has joined
// since the round began (freshJoins was seen then).
func (p *poller) sleep(d time.Duration, seen int64) {
	pollerSpins.Store(false)
	p.wake.arm()
	p.sleeping.Store(true)
	if freshJoins.Load() != seen {
		p.sleeping.Store(false)
		pollerSpins.Store(true)
		return
	}
	pollerSleeps.Add(1)
	if o := pollSleepFor.Load(); o != 0 {
		d = time.Duration(o)
	}
	start := time.Now()
	p.wake.sleep(d)
	pollerSlept.Add(int64(time.Since(start)))
	p.sleeping.Store(false)
}

// cancel ends w for a waiter that leaves. It returns once the poller is not
// querying w's target and never will again: at most one query's time.
func (w *pollWait) cancel() {
	for {
		switch w.state.Load() {
		case pollIdle:
			if w.state.CompareAndSwap(pollIdle, pollCancelled) {
				polledWaits.Add(-1)
				return
			}
		case pollQuerying:
			runtime.Gosched()
		default:
			return
		}
	}
}

// run is the poller's goroutine.
func (p *poller) run() {
	groups := map[target]*pollGroup{}
	var list []*pollGroup
	var batch []*pollWait
	var sleep time.Duration
	for {
		seen := freshJoins.Load()
		batch = takeAll(&p.incoming, batch)
		if len(batch) == 0 && len(list) == 0 {
			// Nothing to wait for: end, unless a wait joined after the
			// take and before running was cleared (its add then found
			// running set and left the poller to this goroutine).
			pollerSpins.Store(false)
			if retire(&p.running, &p.incoming) {
				return
			}
			continue
		}
		for _, w := range batch {
			g := groups[w.t]
			if g == nil {
				g = &pollGroup{t: w.t}
				groups[w.t] = g
				list = append(list, g)
			}
			w.t = nil
			g.waits = append(g.waits, w)
		}
		clear(batch)

		start := time.Now()
		var progress bool
		var limit time.Duration
		var fresh time.Time // the latest fresh of the waits still waiting
		list, progress, limit, fresh = round(list, groups)
		now := time.Now()
		busy := now.Sub(start)
		pollerBusy.Add(int64(busy))
		switch {
		case progress:
			// More targets are likely to finish soon after: query again
			// at once.
			sleep = 0
		case now.Before(fresh):
			// A wait is within its spinning budgets: query again once
			// other goroutines have had their turn.
			sleep = 0
			runtime.Gosched()
		default:
			sleep = nextSleep(sleep, busy, limit)
			p.sleep(sleep, seen)
		}
	}
}

// round queries each group's target once and ends the waits whose target
// finished or failed; it drops the groups left with no wait. It returns
// the groups still waiting, whether any target finished, and the smallest
// longest sleep (Policy.MaxSleep) and the latest fresh of the waits still
// waiting: once the waits that joined without spinning have ended, their
// budgets keep the poller querying no more.
//
// The waits on a target found finished are woken at once.
func round(list []*pollGroup, groups map[target]*pollGroup) ([]*pollGroup, bool, time.Duration, time.Time) {
	pollerRounds.Add(1)
	limit := time.Duration(math.MaxInt64)
	var fresh time.Time
	queries := int64(0)
	progress := false
	// With many targets, sending each finished wait its answer (readying
	// its goroutine) would hold up the queries of the others: the waker
	// sends them instead, beside the round.
	offload := len(list) >= wakerFrom
	k := 0
	for i, g := range list {
		// Claim the waits, dropping those whose waiter left. (The slices
		// are written only when something changes: a round of a thousand
		// targets dirties no line of theirs that it need not.)
		n := 0
		for j, w := range g.waits {
			if w.state.CompareAndSwap(pollIdle, pollQuerying) {
				if n != j {
					g.waits[n] = w
				}
				n++
			}
		}
		if n != len(g.waits) {
			clear(g.waits[n:])
			g.waits = g.waits[:n]
		}
		if n == 0 {
			delete(groups, g.t)
			continue
		}
		queries++
		err := guardedQuery(g.t, 0)
		if err == libcuda.CUDA_ERROR_NOT_READY || err != nil && errors.Is(err, libcuda.CUDA_ERROR_NOT_READY) {
			for _, w := range g.waits {
				limit = min(limit, w.maxSleep)
				if w.fresh.After(fresh) {
					fresh = w.fresh
				}
				w.state.Store(pollIdle)
			}
			if k != i {
				list[k] = g
			}
			k++
			continue
		}
		if offload && !progress {
			draining.Store(true)
		}
		progress = true
		sent := mono()
		for _, w := range g.waits {
			w.sent = sent
			if offload {
				handOut(w, err)
				continue
			}
			w.end(err)
		}
		delete(groups, g.t)
	}
	if offload && progress {
		draining.Store(false)
	}
	clear(list[k:])
	pollerQueries.Add(queries)
	return list[:k], progress, limit, fresh
}
