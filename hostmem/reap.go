package hostmem

import (
	"fmt"
	"runtime"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// The reaper waits for the uses of freed buffers. Each query of an event
// is a driver call that holds other threads' launches for a moment (on
// the H200 a loop of cuEventQuery on one thread raised the p99 of another
// thread's launch calls by 40-70%), so it does not query every pending
// event: on one stream, work completes in the order it was submitted, so
// an event found complete proves every event recorded before it on the
// same stream complete too. Each round queries a target use of each
// stream, the newest one when the target was chosen, and once it is
// complete finishes all the uses up to it at once; while it is still
// running, a binary search over the older ones finds the newest complete
// one, so that memory whose work is done does not wait for later work on
// its stream.
//
// Record order is known from a sequence number taken under a lock of the
// stream, and a stream is known by its unique id (cuStreamGetId), not by
// its handle, which the driver may give to a new stream once the old one
// is destroyed. Uses whose stream has no id (the legacy and per-thread
// streams, or a driver older than CUDA 12.0) are queried on their own.
var reaper struct {
	mu      gosync.Mutex
	queues  map[queueKey]*queue
	running bool          // the reaper goroutine runs
	wake    chan struct{} // shortens the reaper's sleep
	hurry   int           // Waits past their own polling: the reaper yield-polls
	spare   [][]waiting   // room of deleted queues, for new ones
}

func init() { reaper.wake = make(chan struct{}, 1) }

// Ticks of the reaper: the shortest after new work or progress, doubling
// while nothing completes, up to the longest. Wait polls every hurryTick,
// yielding between, for up to hurryFor after the last progress, and then
// hurries the reaper to do so.
//
// Behind a loop that wraps, uses and frees as fast as it can, a 10µs tick
// queries every few tens of microseconds; a 1ms tick keeps the reaper to
// about a thousand queries a second per stream while its work completes
// (a few more per round while it does not), and the runtime's timers are
// about that coarse anyway when the process is otherwise idle.
const (
	minTick   = time.Millisecond
	maxTick   = 4 * time.Millisecond
	hurryTick = 10 * time.Microsecond
	hurryFor  = 2 * time.Millisecond
)

// queueKey names the uses that complete in order: those recorded on one
// stream (by id and context), or a single use (alone).
type queueKey struct {
	ctx   libcuda.Context
	id    uint64
	alone uint64
}

var aloneKeys atomic.Uint64

// queue holds the pending uses of one stream, in record order. A queue
// that has run empty is kept for a few rounds, with its room for uses, for
// the stream's next ones.
type queue struct {
	uses   []waiting
	target uint64 // seq of the use queried next; 0 until chosen
	idle   int    // rounds it has been empty
}

// idleRounds is how many rounds an empty queue is kept. The room of up to
// maxSpare deleted queues, of up to maxSpareUses uses each, is kept for
// new ones, so that bursts of releases with pauses between them do not
// grow a queue from nothing each time.
const (
	idleRounds   = 2
	maxSpare     = 8
	maxSpareUses = 4096
)

// newQueue returns an empty queue, with the room of a deleted one if
// there is one; reaper.mu is held.
func newQueue() *queue {
	q := &queue{}
	if n := len(reaper.spare); n > 0 {
		q.uses, reaper.spare = reaper.spare[n-1], reaper.spare[:n-1]
	}
	return q
}

// deleteQueue deletes the empty queue of k and keeps its room; reaper.mu
// is held.
func deleteQueue(k queueKey, q *queue) {
	delete(reaper.queues, k)
	if len(reaper.spare) < maxSpare && cap(q.uses) <= maxSpareUses {
		reaper.spare = append(reaper.spare, q.uses[:0])
	}
}

// waiting is one use of a freed buffer.
type waiting struct {
	st *state
	u  use
}

// Record order: seq is taken and the event recorded under the lock of the
// stream's stripe, so on one stream a smaller seq was recorded earlier.
var (
	recordSeq   atomic.Uint64
	recordLocks [64]gosync.Mutex
)

// record records u's event on its stream and numbers the record.
func record(u *use) error {
	if u.id == 0 {
		u.seq = recordSeq.Add(1)
		return libcuda.EventRecord(u.ev, u.s)
	}
	l := &recordLocks[u.id%uint64(len(recordLocks))]
	l.Lock()
	defer l.Unlock()
	u.seq = recordSeq.Add(1)
	return libcuda.EventRecord(u.ev, u.s)
}

// reap hands the uses of a freed buffer to the reaper.
func reap(st *state, uses []use) {
	reaper.mu.Lock()
	if reaper.queues == nil {
		reaper.queues = make(map[queueKey]*queue)
	}
	st.waiting = len(uses)
	fresh := false // a queue that was empty: worth a wake-up
	for _, u := range uses {
		k := queueKey{ctx: u.ctx, id: u.id}
		if u.id == 0 {
			k = queueKey{alone: aloneKeys.Add(1)}
		}
		q := reaper.queues[k]
		if q == nil {
			q = newQueue()
			reaper.queues[k] = q
		}
		if len(q.uses) == 0 {
			fresh = true
			q.idle = 0
		}
		// Usually the newest record; insert in seq order otherwise.
		i := len(q.uses)
		for i > 0 && q.uses[i-1].u.seq > u.seq {
			i--
		}
		q.uses = append(q.uses, waiting{})
		copy(q.uses[i+1:], q.uses[i:])
		q.uses[i] = waiting{st, u}
	}
	start := !reaper.running
	reaper.running = true
	reaper.mu.Unlock()
	switch {
	case start:
		go reapLoop()
	case fresh:
		// Uses added to a queue wait for its target anyway: no wake-up.
		poke()
	}
}

func poke() {
	select {
	case reaper.wake <- struct{}{}:
	default:
	}
}

// hurryReaper makes the reaper yield-poll every hurryTick until a call of
// unhurryReaper.
func hurryReaper() {
	reaper.mu.Lock()
	reaper.hurry++
	reaper.mu.Unlock()
	poke()
}

func unhurryReaper() {
	reaper.mu.Lock()
	reaper.hurry--
	reaper.mu.Unlock()
}

// probe is what a round asks of one queue: whether its target is
// complete, and if not, which of the uses before it are.
type probe struct {
	k     queueKey
	seq   uint64 // the target's
	ev    libcuda.Event
	done  bool
	err   error
	older [2]int // the uses before the target: olders[older[0]:older[1]]
	upTo  uint64 // with the target not done: the newest use found complete
}

// olders are the uses before each probe's target, in record order.
type older struct {
	seq uint64
	ev  libcuda.Event
}

// reapLoop runs while uses are pending: a tick queries the target of each
// queue, then retires what completed.
//
// Between ticks it sleeps on a timer, so a release usually completes
// within a millisecond or two of the GPU work (the runtime rounds short
// timers up to about a millisecond when it is otherwise idle); polling
// faster would take a core and make the queries that stall other threads'
// launches. While a Wait or Drain has stopped polling by itself and
// sleeps, the reaper yields instead of sleeping.
func reapLoop() {
	tick := minTick
	timer := time.NewTimer(tick)
	defer timer.Stop()
	var probes []probe
	var yieldUntil time.Time // while a Drain waits: yield, not sleep, until then
	hurry := false
	for {
		if hurry && time.Now().Before(yieldUntil) {
			for next := time.Now().Add(hurryTick); time.Now().Before(next); {
				runtime.Gosched()
			}
		} else {
			timer.Reset(tick)
			select {
			case <-timer.C:
			case <-reaper.wake:
				// New work or a Drain: back to the shortest tick.
				timer.Stop()
				tick = minTick
				yieldUntil = time.Now().Add(hurryFor)
				reaper.mu.Lock()
				hurry = reaper.hurry > 0
				reaper.mu.Unlock()
				continue
			}
		}
		var progress, running bool
		probes, progress, hurry, running = reapRound(probes, true)
		if !running {
			return
		}
		if progress {
			tick = minTick
			yieldUntil = time.Now().Add(hurryFor)
		} else {
			tick = min(2*tick, maxTick)
		}
	}
}

// rounds runs one round at a time: the reaper's, or a waiting caller's.
// The round's scratch space, which rounds holds, is kept from round to
// round, so that a steady loop of releases allocates nothing here.
var (
	rounds      gosync.Mutex
	roundOlders []older
	roundReady  []waiting
	roundRetire []*state
)

// newestDone returns the seq of the newest complete use of uses, which
// are in record order on one stream, or 0 for none. A query that fails
// ends the search: the use is found failed when it becomes a target.
func newestDone(uses []older) uint64 {
	if len(uses) == 0 {
		return 0
	}
	// Most often, behind a busy stream, not even the oldest is complete.
	if done, err := sync.EventDone(uses[0].ev); err != nil || !done {
		return 0
	}
	lo, hi := 0, len(uses) // uses[:lo+1] complete, uses[hi:] not
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		done, err := sync.EventDone(uses[mid].ev)
		if err != nil {
			break
		}
		if done {
			lo = mid
		} else {
			hi = mid
		}
	}
	return uses[lo].seq
}

// reapRound queries the target of each queue once and finishes the uses
// that completed; progress says whether any did, hurry whether a Drain or
// Wait is waiting. For the reaper (byReaper), running says whether it
// should go on; it stops once no use is pending.
func reapRound(probes []probe, byReaper bool) (_ []probe, progress, hurry, running bool) {
	rounds.Lock()
	defer rounds.Unlock()
	reaper.mu.Lock()
	probes = probes[:0]
	olders := roundOlders[:0]
	for k, q := range reaper.queues {
		if len(q.uses) == 0 {
			if q.idle++; q.idle > idleRounds {
				deleteQueue(k, q)
			}
			continue
		}
		if q.target == 0 {
			// The newest use; those after it wait for the next round.
			q.target = q.uses[len(q.uses)-1].u.seq
		}
		p := probe{k: k, seq: q.target}
		for _, w := range q.uses {
			if w.u.seq == q.target {
				p.ev = w.u.ev
				break
			}
		}
		probes = append(probes, p)
	}
	reaper.mu.Unlock()

	busy := 0 // probes whose target is still running
	for i := range probes {
		p := &probes[i]
		p.done, p.err = sync.EventDone(p.ev)
		if !p.done && p.err == nil {
			busy++
		}
	}
	if busy > 0 {
		// Work on those streams is still running, but earlier uses may be
		// complete: completion is monotone in record order, so a binary
		// search over the uses before the target finds the newest complete
		// one. Only rounds remove uses, so the target is still there.
		reaper.mu.Lock()
		for i := range probes {
			p := &probes[i]
			if p.done || p.err != nil {
				continue
			}
			p.older[0] = len(olders)
			for _, w := range reaper.queues[p.k].uses {
				if w.u.seq == p.seq {
					break
				}
				olders = append(olders, older{w.u.seq, w.u.ev})
			}
			p.older[1] = len(olders)
		}
		reaper.mu.Unlock()
		for i := range probes {
			if p := &probes[i]; !p.done && p.err == nil {
				p.upTo = newestDone(olders[p.older[0]:p.older[1]])
			}
		}
	}
	roundOlders = olders[:0]

	ready := roundReady[:0]   // uses complete: recycle the event, maybe retire
	retire := roundRetire[:0] // buffers whose last use completed
	var broken []*state       // buffers whose release failed here
	var errs []error          // the error of each broken buffer
	reaper.mu.Lock()
	for _, p := range probes {
		q := reaper.queues[p.k]
		upTo := p.seq // complete: the uses recorded up to this one
		switch {
		case p.err != nil:
		case p.done:
		case p.upTo != 0:
			upTo = p.upTo
		default:
			continue
		}
		progress = true
		n := 0
		for _, w := range q.uses {
			switch {
			case p.err != nil && w.u.seq == p.seq:
				// Its event and the event's hold on the context are
				// kept for good with the memory (state.fail).
				w.st.waiting--
				if !w.st.broken {
					w.st.broken = true
					broken = append(broken, w.st)
					errs = append(errs, fmt.Errorf("waiting for stream %#x: %w", uintptr(w.u.s), p.err))
				}
			case p.err == nil && w.u.seq <= upTo:
				ready = append(ready, w)
				w.st.waiting--
				if w.st.waiting == 0 && !w.st.broken {
					retire = append(retire, w.st)
				}
			default:
				q.uses[n] = w
				n++
			}
		}
		clear(q.uses[n:])
		q.uses = q.uses[:n]
		if upTo == p.seq {
			q.target = 0 // choose the newest again next round
		}
	}
	hurry = reaper.hurry > 0
	if byReaper && !pendingUses() {
		reaper.running = false
		for k, q := range reaper.queues { // all empty: none is kept while the reaper is stopped
			deleteQueue(k, q)
		}
	}
	running = reaper.running
	reaper.mu.Unlock()

	for _, w := range ready {
		putEvent(w.u)
	}
	for i, st := range broken {
		st.fail(errs[i])
	}
	for _, st := range retire {
		st.afterUses()
	}
	clear(ready) // the scratch space must not keep states alive
	clear(retire)
	roundReady, roundRetire = ready[:0], retire[:0]
	return probes, progress, hurry, running
}

// pendingUses reports whether any queue holds a use; reaper.mu is held.
func pendingUses() bool {
	for _, q := range reaper.queues {
		if len(q.uses) > 0 {
			return true
		}
	}
	return false
}
