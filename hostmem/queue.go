package hostmem

import (
	"fmt"
	gosync "sync"
	"sync/atomic"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// The owner waits for the uses of freed buffers by querying their events.
// Each query holds other threads' launches for a moment (on the H200 a
// loop of cuEventQuery on one thread raised the p99 of another thread's
// launch calls by 60-90%), so it does not query every pending event: on
// one stream, work completes in the order it was submitted, so an event
// found complete proves every event recorded before it on the same stream
// complete too. Each round queries a target use of each stream, and once
// it is complete finishes all the uses up to it at once; while it is
// still running, a binary search over the older ones finds the newest
// complete one, so that memory whose work is done does not wait for later
// work on its stream. The target is the newest use recorded before the
// owner's previous round (a tick ago at least): on a stream whose work
// keeps up, that one is complete, so one query a round finishes the uses
// of a whole tick, and the uses recorded since, whose work may still be in
// flight, wait for the next round instead of costing a search. A stream
// whose uses are all that recent is not queried in the round. The rounds
// of a Wait (help) target the newest use.
//
// Record order is known from a sequence number taken under a lock of the
// stream, and a stream is known by its unique id (cuStreamGetId), not by
// its handle, which the driver may give to a new stream once the old one
// is destroyed. Uses whose stream has no id (the legacy and per-thread
// streams, or a driver older than CUDA 12.0) are queried on their own.

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
	uses   []waiting // buf[head:head+len(uses)]
	buf    []waiting // the room for uses (len is cap), kept zero outside uses
	head   int
	ctx    libcuda.Context // the context of the uses' events
	ctxID  uint64          // its unique id; 0 where unknown
	target uint64          // seq of the use queried next; 0 until chosen
	idle   int             // rounds it has been empty
}

// idleRounds is how many rounds an empty queue is kept. The room of up to
// maxSpare deleted queues, of up to maxSpareUses uses each, is kept for
// new ones.
const (
	idleRounds   = 2
	maxSpare     = 8
	maxSpareUses = 4096
)

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

// enqueue puts the uses of a freed state in their streams' queues.
func (o *owner) enqueue(st *state) {
	st.waiting = len(st.uses)
	for _, u := range st.uses {
		k := queueKey{ctx: u.ctx, id: u.id}
		if u.id == 0 {
			k = queueKey{alone: aloneKeys.Add(1)}
		}
		q := o.queues[k]
		if q == nil {
			q = o.newQueue()
			q.ctx, q.ctxID = u.ctx, u.ctxID
			o.queues[k] = q
		}
		q.idle = 0
		q.push(waiting{st, u})
	}
}

// push adds w to q's uses, in seq order: usually the newest record, at
// the end. When the room after the uses has run out, the uses move to its
// front if at least as much room is free before them (the cuts since the
// last move pay for it), else the room doubles; so a steady loop whose
// uses are cut as fast as they come allocates nothing, however long it
// runs.
func (q *queue) push(w waiting) {
	n := len(q.uses)
	if q.head+n == len(q.buf) {
		if q.head > 0 && q.head >= n {
			copy(q.buf, q.uses) // no overlap: head >= n
			clear(q.buf[n : q.head+n])
		} else {
			buf := make([]waiting, max(2*len(q.buf), 16))
			copy(buf, q.uses)
			q.buf = buf
		}
		q.head = 0
	}
	q.uses = q.buf[q.head : q.head+n+1]
	i := n
	for i > 0 && q.uses[i-1].u.seq > w.u.seq {
		i--
	}
	copy(q.uses[i+1:], q.uses[i:n])
	q.uses[i] = w
}

func (o *owner) newQueue() *queue {
	q := &queue{}
	if n := len(o.spare); n > 0 {
		q.buf, o.spare = o.spare[n-1], o.spare[:n-1]
	}
	q.uses = q.buf[:0]
	return q
}

func (o *owner) deleteQueue(k queueKey, q *queue) {
	delete(o.queues, k)
	if len(o.spare) < maxSpare && len(q.buf) <= maxSpareUses {
		o.spare = append(o.spare, q.buf) // zero: its uses were cut
	}
}

// usesPending reports whether any queue holds a use.
func (o *owner) usesPending() bool {
	for _, q := range o.queues {
		if len(q.uses) > 0 {
			return true
		}
	}
	return false
}

// probe is what a round asks of one queue: whether its target is
// complete, and if not, which of the uses before it are.
type probe struct {
	q    *queue
	seq  uint64 // the target's
	ev   libcuda.Event
	gone bool // the uses' context was destroyed: nothing to query
	done bool
	err  error
	upTo uint64 // with the target not done: the newest use found complete
}

// roundScratch is the room a round uses, kept from round to round so that
// a steady loop of releases allocates nothing here.
type roundScratch struct {
	probes []probe
	asked  []ctxAnswer // contexts asked whether they still exist, this round
}

// ctxAnswer is whether a context is gone, asked once a round.
type ctxAnswer struct {
	k    ctxKey
	gone bool
}

// round queries the target of each queue once and finishes the uses that
// completed; it reports whether any did, and whether it queried at all.
//
// fresh targets the newest use of each stream; otherwise the newest one
// recorded before the previous round.
func (o *owner) round(fresh bool) (progress, queried bool) {
	o.scratch.asked = o.scratch.asked[:0]
	limit := o.mark
	if fresh {
		limit = ^uint64(0)
	}
	// Uses recorded from here on are the next round's.
	o.mark = recordSeq.Load()
	probes := o.choose(o.scratch.probes[:0], limit)
	for i := range probes {
		p := &probes[i]
		if p.gone {
			continue
		}
		queried = true
		p.done, p.err = eventDone(p.ev)
		if !p.done && p.err == nil {
			p.upTo = o.newestDone(p.q, p.seq)
		}
	}
	for i := range probes {
		if o.finish(&probes[i]) {
			progress = true
		}
		probes[i] = probe{}
	}
	o.scratch.probes = probes[:0]
	return progress, queried
}

// eventDone queries ev, counted in Stats.EventQueries.
func eventDone(ev libcuda.Event) (bool, error) {
	activity.queries.Add(1)
	return sync.EventDone(ev)
}

// gone reports whether the context k has been destroyed, asking the
// driver (cuCtxGetId) once a round for each context however many of its
// streams have uses pending.
func (o *owner) gone(k ctxKey) bool {
	for _, a := range o.scratch.asked {
		if a.k == k {
			return a.gone
		}
	}
	g := ctxGone(k.ctx, k.id)
	o.scratch.asked = append(o.scratch.asked, ctxAnswer{k, g})
	return g
}

// choose returns a probe of each queue with uses recorded up to limit (a
// seq), and deletes the queues empty for idleRounds rounds.
func (o *owner) choose(probes []probe, limit uint64) []probe {
	for k, q := range o.queues {
		if len(q.uses) == 0 {
			if q.idle++; q.idle > idleRounds {
				o.deleteQueue(k, q)
			}
			continue
		}
		if q.target == 0 {
			// The newest use up to limit; those after it wait.
			n := len(q.uses)
			if limit != ^uint64(0) {
				n = q.index(limit + 1)
			}
			if n == 0 {
				continue // all recorded since the previous round
			}
			q.target = q.uses[n-1].u.seq
		}
		p := probe{q: q, seq: q.target}
		if o.gone(ctxKey{q.ctx, q.ctxID}) {
			// Its events went with it, and its work can no longer reach
			// the memory: the driver unregistered it with the context.
			p.gone = true
			probes = append(probes, p)
			continue
		}
		if i := q.index(q.target); i < len(q.uses) {
			p.ev = q.uses[i].u.ev
		}
		probes = append(probes, p)
	}
	return probes
}

// index returns the position of the first use of q with a seq of at
// least seq: the uses are in seq order.
func (q *queue) index(seq uint64) int {
	lo, hi := 0, len(q.uses)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if q.uses[mid].u.seq < seq {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// newestDone returns the seq of the newest complete use of q before seq,
// or 0 for none: completion is monotone in record order, so a binary
// search over the uses in place finds it with O(log n) queries and no
// copy. A query that fails ends the search: the use is found failed when
// it becomes a target.
func (o *owner) newestDone(q *queue, seq uint64) uint64 {
	uses := q.uses[:q.index(seq)]
	if len(uses) == 0 {
		return 0
	}
	// Most often, behind a busy stream, not even the oldest is complete.
	if done, err := eventDone(uses[0].u.ev); err != nil || !done {
		return 0
	}
	lo, hi := 0, len(uses) // uses[:lo+1] complete, uses[hi:] not
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		done, err := eventDone(uses[mid].u.ev)
		if err != nil {
			break
		}
		if done {
			lo = mid
		} else {
			hi = mid
		}
	}
	return uses[lo].u.seq
}

// finish applies a probe's answer to its queue: uses up to the newest
// complete one are done, a failed target fails its release.
func (o *owner) finish(p *probe) bool {
	upTo := p.seq // complete: the uses recorded up to this one
	switch {
	case p.gone:
		o.finishGone(p.q)
		return true
	case p.err != nil:
		o.failTarget(p)
		return true
	case p.done:
	case p.upTo != 0:
		upTo = p.upTo
	default:
		return false
	}
	// The uses up to upTo are a prefix: finish it and cut it off, without
	// looking at the uses after it.
	q := p.q
	k := q.index(upTo + 1)
	for i := range k {
		w := q.uses[i]
		q.uses[i] = waiting{}
		putEvent(w.u)
		w.st.waiting--
		if w.st.waiting == 0 && !w.st.broken {
			o.afterUses(w.st)
		}
	}
	q.cut(k)
	if upTo == p.seq {
		q.target = 0 // choose the newest again next round
	}
	return true
}

// finishGone finishes every use of q, whose context has been destroyed:
// their events were destroyed with it (neither queried nor destroyed
// again), and their holds on the context are let go.
func (o *owner) finishGone(q *queue) {
	for i, w := range q.uses {
		q.uses[i] = waiting{}
		w.u.hold.release()
		w.st.waiting--
		if w.st.waiting == 0 && !w.st.broken {
			o.afterUses(w.st)
		}
	}
	q.cut(len(q.uses))
	q.target = 0
}

// cut drops the first k uses, which the caller has zeroed; their room is
// reclaimed by push.
func (q *queue) cut(k int) {
	q.uses = q.uses[k:]
	q.head += k
	if len(q.uses) == 0 {
		q.head = 0
		q.uses = q.buf[:0]
	}
}

// failTarget fails the release of the buffer whose use's event could not
// be queried. Its event and the event's hold on the context are kept for
// good with the memory: the GPU may still use both.
func (o *owner) failTarget(p *probe) {
	q := p.q
	if i := q.index(p.seq); i < len(q.uses) && q.uses[i].u.seq == p.seq {
		w := q.uses[i]
		copy(q.uses[i:], q.uses[i+1:])
		q.uses[len(q.uses)-1] = waiting{}
		q.uses = q.uses[:len(q.uses)-1]
		w.st.waiting--
		if !w.st.broken {
			w.st.broken = true
			o.fail(w.st, fmt.Errorf("waiting for stream %#x: %w", uintptr(w.u.s), p.err))
		}
	}
	q.target = 0
}
