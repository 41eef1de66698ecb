package graph

import (
	gosync "sync"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// capture is the record of a capture made through this package, from its
// begin to its end: Lease finds it in live and attaches its functions
// there. Cached reuses one record for each of its captures.
//
// A capture is found by the stream it began on, with no driver call: while
// the record is live, the driver's capture on that stream is this one
// (package graph began it and has not ended it). Only a lease from
// another stream, one that joined the capture through an event, asks the
// driver which capture that is (cuStreamGetCaptureInfo), and then the
// capture's id, which the begin does not ask for: a capture that nothing
// leases from a joined stream makes no call for its id. The per-thread
// stream is the exception: its handle names another stream on each
// thread, so its captures are found by id alone, asked at the begin.
type capture struct {
	// Guarded by live.mu.
	stream libcuda.Stream // the stream the capture began on
	id     uint64         // the driver's capture id; 0 until asked
	gen    uint64         // the captures begun with this record so far
	on     bool           // begun and not ended: in live, and leases are taken
	leases *leases        // made at the first lease

	// entry is the capture's registration in package sync, reused by
	// each capture of a Cached (sync.StartCaptureWith): none allocates.
	entry sync.CaptureEntry
}

// live holds the records of the captures in progress.
var live struct {
	mu gosync.Mutex
	// byStream: the captures of streams of the callers', by the stream
	// each began on (a stream is captured once at a time).
	byStream map[libcuda.Stream]*capture
	// perThread: the captures of per-thread streams, whose ids are known.
	perThread []*capture
}

// begin makes c the record of the capture in progress on s, whose id is
// id (0: not asked yet; s must then be a stream of the caller's).
func (c *capture) begin(s libcuda.Stream, id uint64) {
	live.mu.Lock()
	defer live.mu.Unlock()
	c.stream, c.id, c.on, c.leases = s, id, true, nil
	c.gen++
	if s == libcuda.CU_STREAM_PER_THREAD {
		live.perThread = append(live.perThread, c)
		return
	}
	if live.byStream == nil {
		live.byStream = map[libcuda.Stream]*capture{}
	}
	live.byStream[s] = c
}

// end ends the capture's record and returns what it leased (nil when
// nothing); no lease is taken after. Calls after the first return nil.
func (c *capture) end() *leases {
	live.mu.Lock()
	defer live.mu.Unlock()
	if !c.on {
		return nil
	}
	if c.stream == libcuda.CU_STREAM_PER_THREAD {
		for i, p := range live.perThread {
			if p == c {
				live.perThread[i] = live.perThread[len(live.perThread)-1]
				live.perThread[len(live.perThread)-1] = nil
				live.perThread = live.perThread[:len(live.perThread)-1]
				break
			}
		}
	} else if live.byStream[c.stream] == c {
		delete(live.byStream, c.stream)
	}
	l := c.leases
	c.on, c.leases = false, nil
	return l
}

// attach attaches f to c, which is live; live.mu is held.
func (c *capture) attach(f leaseFn) {
	if c.leases == nil { // most captures lease nothing
		c.leases = newLeases()
	}
	c.leases.add(f)
}

// leaseOn attaches f to the capture that began on s, a stream of the
// caller's, if one is in progress, and reports whether it did.
func leaseOn(s libcuda.Stream, f leaseFn) bool {
	live.mu.Lock()
	defer live.mu.Unlock()
	c := live.byStream[s]
	if c == nil || !c.on {
		return false
	}
	c.attach(f)
	return true
}

// leaseByID attaches f to the capture in progress whose driver id is id,
// as the driver told it for stream s with status (cuStreamGetCaptureInfo),
// and reports whether it did. The ids of captures not asked yet are asked
// for first. A capture on the per-thread stream that the driver says is
// invalidated is found by its stream instead, as an invalidated capture
// may not tell its id (its graph never runs: a lease kept by the wrong one
// of them is harmless).
func leaseByID(id uint64, status libcuda.StreamCaptureStatus, s libcuda.Stream, f leaseFn) bool {
	if leaseKnown(id, status, s, f) {
		return true
	}
	// Ask the driver for the ids that the begins did not, outside the
	// lock; a record that has gone on to another capture meanwhile (gen)
	// is left as it is.
	type unknown struct {
		c   *capture
		gen uint64
		s   libcuda.Stream
	}
	var ask []unknown
	live.mu.Lock()
	for _, c := range live.byStream {
		if c.on && c.id == 0 {
			ask = append(ask, unknown{c, c.gen, c.stream})
		}
	}
	live.mu.Unlock()
	if len(ask) == 0 {
		return false
	}
	for _, u := range ask {
		var st libcuda.StreamCaptureStatus
		var cid uint64
		if err := libcuda.StreamGetCaptureInfo(u.s, &st, &cid, nil, nil, nil, nil); err != nil || st == libcuda.CU_STREAM_CAPTURE_STATUS_NONE {
			continue
		}
		live.mu.Lock()
		if u.c.on && u.c.gen == u.gen && u.c.id == 0 {
			u.c.id = cid
		}
		live.mu.Unlock()
	}
	return leaseKnown(id, status, s, f)
}

// leaseKnown is leaseByID among the captures whose ids are known.
func leaseKnown(id uint64, status libcuda.StreamCaptureStatus, s libcuda.Stream, f leaseFn) bool {
	live.mu.Lock()
	defer live.mu.Unlock()
	if id != 0 {
		for _, c := range live.byStream {
			if c.on && c.id == id {
				c.attach(f)
				return true
			}
		}
	}
	for _, c := range live.perThread {
		if c.on && ((id != 0 && c.id == id) || (status == libcuda.CU_STREAM_CAPTURE_STATUS_INVALIDATED && c.stream == s)) {
			c.attach(f)
			return true
		}
	}
	return false
}
