package cuda

import (
	"runtime"
	"slices"
	gosync "sync"
	"sync/atomic"

	"github.com/purecuda/purecuda/libcuda"
)

// Ordering across streams.
//
// Each allocation knows, by byte range, the streams of the last writes and
// of the reads since (a launch's argument and a Stream.Do operand span
// their Slice). A use on another stream of an overlapping range is made
// to wait, in stream order (an event recorded on the other stream,
// cuStreamWaitEvent), for what it conflicts with: a read for the last
// write, a write for the last write and every read since. Reads on
// several streams do not wait for each other. A Slice is written by its
// Alloc's stream first, so a use on another stream waits for the
// allocation too.
//
// While one stream alone has used an allocation (alloc.solo), its uses
// read that one word: no order, no record, no lock (a solo stream is
// among the streams used already, so that Free waits for it).
//
// A copy into a Slice, a memset and a Stream.Do operand marked Write write
// it; a copy out of it, a prefetch and a Read operand read it; a launch
// reads an argument whose C++ parameter is a pointer to const (or an Arg
// marked ReadOnly) and writes the others. Uses on one stream cost one
// atomic load and nothing more: no event, no lock, no allocation.
//
// Inside a capture nothing is waited for and nothing recorded: a capturing
// stream cannot wait for an event recorded outside its capture
// (CUDA_ERROR_STREAM_CAPTURE_ISOLATION), and an ordinary stream that waits
// for an event recorded in a capture is pulled into it (and the capture
// fails with CUDA_ERROR_STREAM_CAPTURE_UNJOINED if it is not joined back).
// The graph orders its own work by its edges; its launches are work of the
// stream they are launched on, which the tracking does not see: order
// other streams' uses of memory that a graph uses with Events, as without
// the tracking. The same holds for a stream made with Unordered, whose
// uses are neither ordered nor recorded.
//
// A stream that waited for another is ordered after all of that stream's
// work submitted until then: it does not wait again for the same uses.
//
// Uses submitted at the same moment from several goroutines are ordered in
// the order the tracking sees them; the program must still order its host
// code (as it must for a Go slice).

// order is an allocation's record of the uses that later ones may have to
// wait for, besides alloc.solo; alloc.usemu guards it.
type order struct {
	uses []ordUse // the uses since the last write that covered them
}

// ordUse is one use of the bytes [lo, hi) of an allocation on a stream,
// the seq-th use that stream recorded.
type ordUse struct {
	st     *streamState
	lo, hi uintptr
	write  bool
	seq    uint64
}

// Unordered makes a stream whose uses of Slices are not ordered after other
// streams' uses, nor recorded for theirs to be: for programs that order
// their streams with Events themselves.
func Unordered() StreamOption {
	return func(c *streamConfig) { c.unordered = true }
}

// orderUse makes work about to be submitted to st that uses the bytes
// [lo, hi) of the allocation with the given access wait for the
// conflicting work of other streams, and records the use. The caller
// holds a (acquire).
func (a *alloc) orderUse(st *streamState, access Access, lo, hi uintptr) error {
	if st.unordered || a.bytes == 0 || a.solo.Load() == st {
		return nil
	}
	return a.orderSlow(st, access, lo, hi)
}

// orderSlow is orderUse where st is not the only user.
func (a *alloc) orderSlow(st *streamState, access Access, lo, hi uintptr) error {
	if c, err := st.capturing(); err != nil {
		return err
	} else if c {
		return nil // the capture's own ordering (see above)
	}
	write := access&Write != 0
	var buf [4]*streamState
	o := &a.ord
	a.usemu.Lock()
	if solo := a.solo.Load(); solo != nil {
		o.uses = append(o.uses[:0], ordUse{st: solo, lo: 0, hi: a.bytes, write: true, seq: solo.ordSeq.Add(1)})
		a.solo.Store(nil)
	}
	waits := o.conflicts(buf[:0], st, write, lo, hi)
	o.record(st, write, lo, hi)
	if write && lo == 0 && hi == a.bytes && o.onlyBy(st) {
		o.uses = o.uses[:0]
		// st is among the streams used before it is solo: a solo
		// stream's uses record nothing (alloc.release).
		a.addUsedLocked(st)
		a.solo.Store(st)
	}
	a.usemu.Unlock()
	for _, x := range waits {
		if err := st.waitFor(x); err != nil {
			return err
		}
	}
	return nil
}

// conflicts appends to waits the other streams whose recorded uses a use
// of [lo, hi) on st (a write when write) must wait for, each once, leaving
// out those st has waited for already.
func (o *order) conflicts(waits []*streamState, st *streamState, write bool, lo, hi uintptr) []*streamState {
	for _, u := range o.uses {
		if u.st == st || u.hi <= lo || hi <= u.lo || (!u.write && !write) {
			continue
		}
		if st.waitedFor(u.st, u.seq) || slices.Contains(waits, u.st) {
			continue
		}
		waits = append(waits, u.st)
	}
	return waits
}

// record records the use of [lo, hi) on st: a write drops the uses it
// covers (ordered before it now); a read of a range that st read last
// renews that record.
func (o *order) record(st *streamState, write bool, lo, hi uintptr) {
	seq := st.ordSeq.Add(1)
	if write {
		kept := o.uses[:0]
		for _, u := range o.uses {
			if !(lo <= u.lo && u.hi <= hi) {
				kept = append(kept, u)
			}
		}
		o.uses = kept
	} else {
		for i := range o.uses {
			if u := &o.uses[i]; u.st == st && !u.write && u.lo == lo && u.hi == hi {
				u.seq = seq
				return
			}
		}
	}
	o.uses = append(o.uses, ordUse{st: st, lo: lo, hi: hi, write: write, seq: seq})
}

// onlyBy reports whether every recorded use is st's.
func (o *order) onlyBy(st *streamState) bool {
	for _, u := range o.uses {
		if u.st != st {
			return false
		}
	}
	return true
}

// waitedFor says whether st has waited for x's work up to its seq-th use.
func (st *streamState) waitedFor(x *streamState, seq uint64) bool {
	st.ordMu.Lock()
	defer st.ordMu.Unlock()
	for _, w := range st.ordWaited {
		if w.st == x {
			return w.seq >= seq
		}
	}
	return false
}

// noteOrdered records that st waited for x's work up to its seq-th use,
// in place of the oldest entry when the table is full.
func (st *streamState) noteOrdered(x *streamState, seq uint64) {
	st.ordMu.Lock()
	defer st.ordMu.Unlock()
	for i := range st.ordWaited {
		if w := &st.ordWaited[i]; w.st == x || w.st == nil {
			w.st, w.seq = x, max(w.seq, seq)
			return
		}
	}
	copy(st.ordWaited[:], st.ordWaited[1:])
	st.ordWaited[len(st.ordWaited)-1] = ordWait{st: x, seq: seq}
}

// waitFor makes st's later work wait for the work submitted to x so far:
// x's order event recorded now (or its final event once closed), and
// cuStreamWaitEvent on st. Nothing when x is being captured: waiting for
// an event recorded there would pull st into the capture.
func (st *streamState) waitFor(x *streamState) error {
	seq := x.ordSeq.Load() // the event below follows every use recorded so far
	ev, err := x.orderMark()
	if err != nil || ev == 0 {
		return err
	}
	if err := st.ctx.do(func() error { return libcuda.StreamWaitEvent(st.raw, ev, 0) }); err != nil {
		return driverErr("cuStreamWaitEvent", err)
	}
	st.noteOrdered(x, seq)
	return nil
}

// orderMark returns an event after the work submitted to x so far: its
// reusable order event recorded now, or its final event once closed; 0
// while x is being captured.
//
// The caller holds another stream's mu for reading (the stream whose work
// is to wait), so orderMark must not wait for x's mu: with two streams each
// waiting for the other's work and a Close pending on each (a pending
// writer blocks new readers), the four would wait for each other for ever.
// x's ordMu, which Close takes only around the stream's destruction and
// never while waiting for anything but the driver, is enough to keep x's
// handle valid for the record (TestCrossWaitsWithTwoClosesDoNotDeadlock).
func (x *streamState) orderMark() (libcuda.Event, error) {
	if h := orderMarkHook.Load(); h != nil {
		(*h)()
	}
	x.ordMu.Lock()
	defer x.ordMu.Unlock()
	if x.closed {
		return x.final, nil
	}
	if c, err := x.capturing(); err != nil || c {
		return 0, err
	}
	err := x.ctx.do(func() error {
		if x.ordEv == 0 {
			var ev libcuda.Event
			if err := libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)); err != nil {
				return driverErr("cuEventCreate", err)
			}
			x.ordEv = ev
			// Destroyed with the state, as the final event is: a wait
			// submitted elsewhere may still refer to it after Close.
			x.ctx.ref()
			runtime.AddCleanup(x, destroyEvent, eventRef{ctx: x.ctx, ev: ev})
		}
		if err := libcuda.EventRecord(x.ordEv, x.raw); err != nil {
			return driverErr("cuEventRecord", err)
		}
		return nil
	})
	return x.ordEv, err
}

// orderMarkHook, when set (by tests), runs as orderMark begins.
var orderMarkHook atomic.Pointer[func()]

// ordFields are the fields of streamState for ordering.
type ordFields struct {
	ordSeq    atomic.Uint64 // the uses recorded on this stream (orderSlow)
	ordMu     gosync.Mutex  // guards ordEv's records and ordWaited, and the handle against Close's destroy (orderMark)
	ordEv     libcuda.Event
	ordWaited [8]ordWait // the streams this one waited for, and how far
}

// ordWait is how far one stream waited for another: up to its seq-th use.
type ordWait struct {
	st  *streamState
	seq uint64
}
