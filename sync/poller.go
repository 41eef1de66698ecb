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
// After a round in which some target finished, the poller goes on at once
// (it yields first, so that the waiters it woke run). So it does, yielding
// between rounds, while a wait that joined it without spinning of its own
// (every spin slot taken: see wait) is within its Spin and Yield budgets:
// the poller spins for all such waits together, one goroutine instead of
// one each, with a wake-up as quick as a lone spinning wait's for as long
// as its round is short. A wait that joins so while the poller sleeps
// wakes it (a kick): its first round comes at once, not after the sleep.
// After a round in which nothing finished, past those budgets, it sleeps,
// from pollMinSleep doubling while nothing finishes, up to pollMaxSleep
// (or a quarter of its last round, when that is longer: a poller with
// thousands of targets does not query without pause) or the smallest
// Policy.MaxSleep of its waits, whichever is least. A wake-up comes at
// most that sleep and one round after the work ends, which is what one
// thread querying every target round-robin gives, plus the sleep. Being
// one goroutine, it never uses more than one core; with many targets (a
// round much longer than its sleep) it uses most of one. It runs only
// while waits are outstanding: it starts with the first and ends when
// none is left.
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
// round took more than four times as long.
const pollMaxSleep = 100 * time.Microsecond

// pollSleepFor, when not zero, is how long every sleep of the poller lasts
// (tests set it).
var pollSleepFor atomic.Int64

// pollMinSleep is the poller's first sleep after a round in which some
// target finished.
const pollMinSleep = time.Microsecond

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
	// that joined without spinning; zero for others. Until then the
	// poller does not sleep.
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
	kick := p.sleeping && !fresh.IsZero()
	if kick {
		p.sleeping = false
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
	var sleep time.Duration
	for {
		p.mu.Lock()
		for _, e := range p.pending {
			g := groups[e.t]
			if g == nil {
				g = &pollGroup{t: e.t}
				groups[e.t] = g
				list = append(list, g)
			}
			g.waits = append(g.waits, e.w)
		}
		clear(p.pending)
		p.pending = p.pending[:0]
		if len(list) == 0 {
			p.running = false
			p.pending = nil
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()

		start := time.Now()
		var progress bool
		var limit time.Duration
		var fresh time.Time // the latest fresh of the waits still waiting
		list, progress, limit, fresh = round(list, groups)
		now := time.Now()
		pollerBusy.Add(int64(now.Sub(start)))
		if progress || now.Before(fresh) {
			// More targets are likely to finish soon after, or a wait
			// is in its spinning budget: query again once the waiters
			// woken (and other goroutines) have had their turn.
			sleep = 0
			runtime.Gosched()
			continue
		}
		longest := max(pollMaxSleep, now.Sub(start)/4)
		sleep = min(max(2*sleep, pollMinSleep), longest, limit)
		p.sleep(sleep)
	}
}

// round queries each group's target once and ends the waits whose target
// finished or failed; it drops the groups left with no wait. It returns
// the groups still waiting, whether any target finished, and the smallest
// longest sleep (Policy.MaxSleep) and the latest fresh of the waits still
// waiting: once the waits that joined without spinning have ended, their
// budgets keep the poller querying no more.
func round(list []*pollGroup, groups map[target]*pollGroup) ([]*pollGroup, bool, time.Duration, time.Time) {
	pollerRounds.Add(1)
	limit := time.Duration(math.MaxInt64)
	var fresh time.Time
	queries := int64(0)
	progress := false
	k := 0
	for _, g := range list {
		n := 0
		for _, w := range g.waits {
			if w.state.CompareAndSwap(pollIdle, pollQuerying) {
				g.waits[n] = w
				n++
			}
		}
		clear(g.waits[n:])
		g.waits = g.waits[:n]
		if n == 0 {
			delete(groups, g.t)
			continue
		}
		queries++
		err := guardedQuery(g.t, 0)
		if errors.Is(err, libcuda.CUDA_ERROR_NOT_READY) {
			for _, w := range g.waits {
				limit = min(limit, w.maxSleep)
				if w.fresh.After(fresh) {
					fresh = w.fresh
				}
				w.state.Store(pollIdle)
			}
			list[k] = g
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
