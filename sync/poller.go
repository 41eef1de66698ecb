package sync

import (
	"errors"
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
// (it yields first, so that the waiters it woke run). After a round in
// which none did, it sleeps, from pollMinSleep doubling while nothing
// finishes, up to pollMaxSleep or the smallest Policy.MaxSleep of its
// waits; and never less than that round took (up to pollMaxRoundSleep),
// so that while nothing finishes it uses at most about half a core
// whatever the number of targets. Being one goroutine, it never uses more
// than one. It runs only while waits are
// outstanding: it starts with the first and ends when none is left.
//
// Its queries are guardedQuery's: counted in flight for StartCapture, and
// made in relaxed mode while a capture is in progress. A target being
// captured (ErrCapturing) or any other error ends the waits on it with
// that error, as a wait's own query would.

// pollMaxSleep caps the poller's sleep between rounds.
const pollMaxSleep = 100 * time.Microsecond

// pollMinSleep is the poller's first sleep after a round in which some
// target finished.
const pollMinSleep = time.Microsecond

// pollMaxRoundSleep caps the sleep that a long round asks for (at least
// as long as it took): a round that took long because the poller was
// descheduled must not hold back the next one for as long again.
const pollMaxRoundSleep = time.Millisecond

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
}

var shared poller

var (
	polledWaits   atomic.Int64 // waits added and not ended (done or cancelled)
	pollerRounds  atomic.Int64 // rounds since the program started
	pollerQueries atomic.Int64 // queries the poller made since the program started
)

// add puts a wait on t with the given longest sleep on the poller, and
// starts the poller when it is not running.
func (p *poller) add(t target, maxSleep time.Duration) *pollWait {
	w := &pollWait{done: make(chan error, 1), maxSleep: maxSleep}
	polledWaits.Add(1)
	p.mu.Lock()
	p.pending = append(p.pending, pollEntry{t, w})
	if !p.running {
		p.running = true
		go p.run()
	}
	p.mu.Unlock()
	return w
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
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
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
		limit := pollMaxSleep
		list, progress, limit = round(list, groups, limit)
		if progress {
			// More targets are likely to finish soon after: query again
			// once the waiters woken have had their turn.
			sleep = 0
			runtime.Gosched()
			continue
		}
		took := time.Since(start)
		sleep = min(max(2*sleep, pollMinSleep), limit)
		timer.Reset(max(sleep, min(took, pollMaxRoundSleep)))
		<-timer.C
	}
}

// round queries each group's target once and ends the waits whose target
// finished or failed; it drops the groups left with no wait. It returns
// the groups still waiting, whether any target finished, and limit
// lowered to the smallest longest sleep of the waits still waiting.
func round(list []*pollGroup, groups map[target]*pollGroup, limit time.Duration) ([]*pollGroup, bool, time.Duration) {
	pollerRounds.Add(1)
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
				w.state.Store(pollIdle)
			}
			list[k] = g
			k++
			continue
		}
		progress = true
		for _, w := range g.waits {
			w.done <- err
			w.state.Store(pollDone)
			polledWaits.Add(-1)
		}
		delete(groups, g.t)
	}
	clear(list[k:])
	pollerQueries.Add(queries)
	return list[:k], progress, limit
}
