package sync

import (
	"errors"
	"math"
	"runtime"
	gosync "sync"
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
// (or half its last round, when that is longer: a poller with thousands
// of targets queries at most two thirds of the time) or the smallest
// Policy.MaxSleep of its waits, whichever is least. A wake-up comes at
// most that sleep and one round after the work ends, which is what one
// thread querying every target round-robin gives, plus the sleep.
//
// Each target found finished hands its waits back at once (their
// goroutines are readied in the round, not at its end). The poller does
// not yield to them: on the H200 a yield after each finished target, meant
// to run the woken waits on the poller's own awake thread, stretched the
// rounds and put 1,000 waiters' median wake-up 1.4ms behind the
// round-robin reference's (100 waiters: 190-240µs behind), against
// 260-380µs (80-90µs) without it. Being one goroutine, the poller never
// uses more than one core. It runs only while waits are outstanding: it
// starts with the first and ends when none is left.
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
// round took more than twice as long.
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
	return min(max(2*prev, pollMinSleep), max(pollMaxSleep, busy/2), limit)
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
}

type pollEntry struct {
	t target
	w *pollWait
}

// pollGroup is the waits on one target.
type pollGroup struct {
	t     target
	waits []*pollWait
}

type poller struct {
	mu      gosync.Mutex
	running bool
	pending []pollEntry // waits added since the last round
	// sleeping is set while the poller sleeps between rounds, until a
	// wait that joins without spinning of its own kicks it (clearing it).
	sleeping bool
	wake     sleeper
}

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
	w := &pollWait{done: make(chan error, 1), maxSleep: maxSleep, fresh: fresh}
	polledWaits.Add(1)
	p.mu.Lock()
	p.pending = append(p.pending, pollEntry{t, w})
	if !p.running {
		p.running = true
		go p.run()
	}
	kick := false
	if !fresh.IsZero() {
		if !pollerSpins.Load() {
			pollerSpins.Store(true)
		}
		kick, p.sleeping = p.sleeping, false
	}
	p.mu.Unlock()
	if kick {
		pollerKicks.Add(1)
		p.wake.kick()
	}
	return w
}

// sleep sleeps for d between rounds, or until a wait that joins without
// spinning kicks it; it does not sleep at all when such a wait has joined
// since the round.
func (p *poller) sleep(d time.Duration) {
	p.mu.Lock()
	for _, e := range p.pending {
		if !e.w.fresh.IsZero() {
			p.mu.Unlock()
			return
		}
	}
	pollerSpins.Store(false)
	p.sleeping = true
	p.wake.arm()
	p.mu.Unlock()
	pollerSleeps.Add(1)
	if o := pollSleepFor.Load(); o != 0 {
		d = time.Duration(o)
	}
	start := time.Now()
	p.wake.sleep(d)
	pollerSlept.Add(int64(time.Since(start)))
	p.mu.Lock()
	p.sleeping = false
	p.mu.Unlock()
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
	var batch []pollEntry // the waits taken from pending, then pending's next backing array
	var sleep time.Duration
	for {
		// Take the waits added since the last round and give pending the
		// array of the last batch: the lock is held for a moment only,
		// however many waits join at once.
		p.mu.Lock()
		batch, p.pending = p.pending, batch[:0]
		if len(batch) == 0 && len(list) == 0 {
			p.running = false
			p.pending = nil
			pollerSpins.Store(false)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		for _, e := range batch {
			g := groups[e.t]
			if g == nil {
				g = &pollGroup{t: e.t}
				groups[e.t] = g
				list = append(list, g)
			}
			g.waits = append(g.waits, e.w)
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
			p.sleep(sleep)
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
		progress = true
		sent := mono()
		for _, w := range g.waits {
			w.sent = sent
			w.done <- err
			w.state.Store(pollDone)
			polledWaits.Add(-1)
		}
		delete(groups, g.t)
	}
	clear(list[k:])
	pollerQueries.Add(queries)
	return list[:k], progress, limit, fresh
}
