package cuda

import (
	"slices"
	gosync "sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/purecuda/purecuda/hostmem"
)

// The pinned index: every live Pinned that Pin or AllocPinned made, by
// address, so that a copy given a plain []T inside one of them treats it
// as that pinned memory (asynchronous, its use recorded on the Buffer)
// instead of as pageable memory. Pins and Frees are rare (a registration
// costs some 100 µs) and lookups are on every copy of a []T, so the index
// is copied on write: a lookup is an atomic load and a binary search of a
// sorted array, with no lock and no allocation, and nothing at all while
// nothing is pinned.
var pinned struct {
	mu  gosync.Mutex // serializes writers
	cur atomic.Pointer[[]pinEntry]
}

// pinEntry is one Pinned's memory: [start, end) in ctx, pinned by buf.
// maxEnd is the largest end of this entry and those before it in the
// array, which bounds the backward scan of a lookup where ranges overlap
// (the same memory pinned twice). The Buffer is held weakly, so that a
// Pinned dropped without Free is still collected (and released by
// hostmem's backstop); its entry then finds nothing and goes at the next
// change of the index.
type pinEntry struct {
	start, end uintptr
	maxEnd     uintptr
	ctx        *ctxState
	buf        weak.Pointer[hostmem.Buffer]
}

// addPinned enters buf's memory, pinned in ctx, into the index.
func addPinned(ctx *ctxState, buf *hostmem.Buffer) {
	start := uintptr(buf.Pointer())
	e := pinEntry{start: start, end: start + uintptr(buf.Size()), ctx: ctx, buf: weak.Make(buf)}
	pinned.mu.Lock()
	defer pinned.mu.Unlock()
	var next []pinEntry
	if p := pinned.cur.Load(); p != nil {
		next = slices.DeleteFunc(slices.Clone(*p), collected)
	}
	i, _ := slices.BinarySearchFunc(next, start, func(e pinEntry, s uintptr) int {
		if e.start <= s { // equal starts: after the ones there
			return -1
		}
		return 1
	})
	storePinned(slices.Insert(next, i, e))
}

// removePinned takes buf out of the index.
func removePinned(buf *hostmem.Buffer) {
	pinned.mu.Lock()
	defer pinned.mu.Unlock()
	p := pinned.cur.Load()
	if p == nil {
		return
	}
	w := weak.Make(buf)
	next := slices.DeleteFunc(slices.Clone(*p), func(e pinEntry) bool { return e.buf == w || collected(e) })
	storePinned(next)
}

// collected says whether an entry's Buffer has been collected.
func collected(e pinEntry) bool { return e.buf.Value() == nil }

// storePinned publishes entries with their maxEnd set; pinned.mu held.
func storePinned(entries []pinEntry) {
	if len(entries) == 0 {
		pinned.cur.Store(nil)
		return
	}
	var m uintptr
	for i := range entries {
		m = max(m, entries[i].end)
		entries[i].maxEnd = m
	}
	pinned.cur.Store(&entries)
}

// lookupPinned returns the Buffer pinned in ctx that holds all of
// [p, p+n), and p's offset in it; nil when there is none, as for pageable
// memory. partial reports memory that starts in such a Buffer and runs
// past its end: the driver refuses one copy over two registrations (or
// into unpinned memory), so the caller must not hand it over as it is.
func lookupPinned(ctx *ctxState, p unsafe.Pointer, n uintptr) (buf *hostmem.Buffer, off uintptr, partial bool) {
	cur := pinned.cur.Load()
	if cur == nil || n == 0 {
		return nil, 0, false
	}
	entries := *cur
	a := uintptr(p)
	// The entries that start at or before a are entries[:i].
	i, _ := slices.BinarySearchFunc(entries, a, func(e pinEntry, s uintptr) int {
		if e.start <= s {
			return -1
		}
		return 1
	})
	for j := i - 1; j >= 0 && entries[j].maxEnd > a; j-- {
		e := &entries[j]
		if e.end <= a || e.ctx != ctx {
			continue
		}
		b := e.buf.Value()
		if b == nil {
			continue
		}
		if a+n <= e.end {
			return b, a - e.start, false
		}
		partial = true
	}
	return nil, 0, partial
}
