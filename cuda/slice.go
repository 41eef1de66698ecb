package cuda

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	gosync "sync"
	"sync/atomic"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Slice is typed device memory: n elements of T, allocated in stream order
// by Alloc. T must hold no Go pointers (numbers, bools, arrays and structs
// of them). A Slice is a small value, like a Go slice: copies and the
// slices Slice(i, j) returns share the same allocation. The zero Slice is
// empty, and every use of it is an error matching ErrNil.
//
// Free returns the memory to the device's pool after the work of every
// stream that used it (by a copy, a memset or a launch) has finished;
// those streams are remembered as the work is submitted, without a driver
// call. Any use after Free is an error matching ErrFreed. An allocation
// whose Slices are all dropped without Free is freed the same way by the
// garbage collector, and a warning is logged.
//
// The memory is not initialised: fill it with Memset or a copy.
//
// # Ordering across streams
//
// Uses of a Slice on several streams are ordered as the program submits
// them, with no Event to forget: a read on one stream (a copy out of it, a
// launch whose C++ parameter is a pointer to const or whose Arg is marked
// ReadOnly, a Read operand of Stream.Do) waits for the last write on
// another; a write (a copy into it, a memset, any other launch argument)
// waits for the last write and the reads since on others. Reads on several
// streams do not wait for each other, nor do uses of disjoint parts of
// one allocation (s.Slice(i, j)). The wait is an event recorded on the
// other stream and cuStreamWaitEvent, made only when the stream changes:
// uses on one stream cost nothing more (no event, no allocation). Inside
// a capture nothing is added (the driver refuses waits across a capture's
// boundary): a graph orders its own work, and memory that a launched graph
// shares with other streams is ordered with Events, as it is on a stream
// made with Unordered.
type Slice[T any] struct {
	h   *allocHandle
	off int // in elements
	n   int
}

// allocHandle is what Slices hold; when it becomes unreachable, the
// allocation is freed (see own and cleanup).
//
// Alloc makes one object, the handle with its allocation inside (own), so
// that an Alloc and its Free cost one Go allocation: the handle carries a
// finalizer (runtime.SetFinalizer, which allocates nothing, where
// runtime.AddCleanup allocates three objects). A finalizer runs only for
// an object that cannot reach itself, so nothing in own points into the
// handle (alloc.home, not an inline buffer of used). A handle of another
// allocation (a module's variable, managed memory) or a view of one
// (View, ViewAt) points to it through shared instead.
type allocHandle struct {
	own     alloc           // first: the allocator aligns the handle to 64 bytes (its size is 192)
	shared  *alloc          // the allocation when not own
	parent  *allocHandle    // a view's: the handle whose finalizer frees the memory, kept reachable by the view
	cleanup runtime.Cleanup // managed memory's (AllocManaged)
	class   class           // of the elements, for launches' type check
	fin     bool            // Alloc's: a finalizer frees own
	_       [192 - 152 - 8 - 8 - 16 - 2]byte
}

// a is the allocation the handle's Slices use.
func (h *allocHandle) a() *alloc {
	if h.shared != nil {
		return h.shared
	}
	return &h.own
}

// root is the handle that frees the allocation when dropped: a view's
// parent, or h.
func (h *allocHandle) root() *allocHandle {
	for h.parent != nil {
		h = h.parent
	}
	return h
}

// stopRelease keeps the garbage collector from freeing the allocation,
// for an explicit Free.
func (h *allocHandle) stopRelease() {
	h = h.root()
	if h.fin {
		runtime.SetFinalizer(h, nil)
		return
	}
	h.cleanup.Stop()
}

// finalizeAlloc frees the allocation of a handle that Alloc made and the
// program dropped without Free.
func finalizeAlloc(h *allocHandle) {
	dropped("Slice", "Free")
	if err := h.own.free(); err != nil && !errors.Is(err, ErrFreed) {
		logErr("freeing a dropped Slice", err)
	}
}

// alloc is one device allocation.
type alloc struct {
	// What a use reads lies in the first 64 bytes, one cache line (Alloc's
	// lies at the start of its handle, 192 bytes: the allocator aligns it).
	mu      gosync.RWMutex // held for reading by uses in progress, for writing by Free
	freed   bool
	global  bool // a module's variable (Global): Module.Close ends it, not Free
	managed bool // AllocManaged's: freed by cuMemFree after its users' work
	foreign bool // Foreign's: released by release after its users' work
	graph   bool // allocated in a capture: a graph's allocation (graphmem.go)
	landed  bool // a graph allocation's: a launch (LaunchGraph, RunCached) may have allocated it; under usemu
	ptr     libcuda.Deviceptr
	bytes   uintptr
	// solo is a stream that may have done anything to the allocation and
	// is the only one that has: its uses need no wait and no record
	// (order.go). It is among used (set under usemu with it).
	solo atomic.Pointer[streamState]
	last atomic.Pointer[streamState] // the stream of the latest use recorded: the common case records nothing

	ctx   *ctxState
	usemu gosync.Mutex
	home  *streamState   // the allocating stream, among the streams used
	used  []*streamState // every other stream used
	ord   order          // the last write and the reads since (order.go)

	relFn func() error // Foreign's: its release
	capID uint64       // a graph allocation's: the capture that allocated it
}

// Alloc allocates n elements of T on the stream's device, from the
// device's current memory pool, in stream order (cuMemAllocAsync): work
// submitted to s later can use it at once, and a first use on another
// stream waits for the allocation by itself (see Slice, # Ordering across
// streams).
//
// Alloc of 0 elements gives an empty Slice, as make does: it holds no
// device memory, copies of nothing to and from it succeed, and Free of it
// (allowed, not needed) makes no driver call.
//
// An allocation that fails with out of memory trims the pool (it gives
// the device the memory that frees left in it) and tries once more before
// it returns the error (matching ErrOutOfMemory).
//
// # Allocating in a capture
//
// Alloc on a stream being captured (Stream.Capture, RunCached) allocates
// in the graph: the capture makes its cuMemAllocAsync a mem-alloc node,
// and the Slice has the node's address, the same for every launch of the
// executable graphs made from the graph. The memory is on the device only
// while a launch has allocated it:
//
//   - Freed in the capture (Free while it is open), it lives from the
//     alloc node to a mem-free node of the same graph, in each launch; the
//     free node follows the capture's uses of the Slice on each of its
//     streams. After the capture the Slice is freed (ErrFreed).
//   - Not freed in the capture, it outlives each launch: work ordered
//     after the launch uses it, and the program frees it with Free after
//     the last launch. Until then the driver refuses to launch that
//     executable graph again (an error matching ErrInvalidValue), unless
//     it was made with Graph.InstantiateAutoFree: each of its launches
//     frees the previous launch's allocation and allocates it again at
//     the same address, so the Slice stays valid from launch to launch
//     (its contents do not).
//
// Each launch through Stream.LaunchGraph or RunCached counts as a write of
// every such outliving Slice of the context, whatever the graph: uses on
// other streams wait for it, and Free follows it. The Free of one whose
// graph was never launched that way frees nothing (there is nothing
// allocated), and before a launch such a Slice must not be used outside
// the graph. The driver restricts graphs with memory nodes: one
// executable graph of each at a time, no clones, no child graphs.
// Device.GraphMem reports the device's graph memory and
// Device.GraphMemTrim gives back what no graph uses; AllocFrom in a
// capture is an error matching ErrCapturing.
func Alloc[T any](s *Stream, n int) (Slice[T], error) {
	return allocSlice[T](s, n, nil)
}

// allocSlice is Alloc from pool, or from the device's current pool when
// pool is nil.
func allocSlice[T any](s *Stream, n int, pool *MemPool) (Slice[T], error) {
	t := reflect.TypeFor[T]()
	if err := checkElem(t); err != nil {
		return Slice[T]{}, fmt.Errorf("cuda: Alloc: %w", err)
	}
	size := t.Size()
	if n < 0 || uint64(n) > uint64(^uintptr(0))/uint64(size) {
		return Slice[T]{}, fmt.Errorf("cuda: Alloc of %d elements of %v: %w", n, t, ErrLength)
	}
	st, err := s.acquire("Alloc")
	if err != nil {
		return Slice[T]{}, err
	}
	defer st.mu.RUnlock()
	if n == 0 {
		h := &allocHandle{}
		h.own.ctx = st.ctx
		return Slice[T]{h: h}, nil
	}
	bytes := uintptr(n) * size
	switch c, err := st.capturing(); {
	case err != nil:
		return Slice[T]{}, fmt.Errorf("cuda: Alloc: %w", err)
	case c && pool != nil:
		return Slice[T]{}, fmt.Errorf("cuda: AllocFrom on a stream being captured: a graph allocates from the device's graph memory; use Alloc: %w", ErrCapturing)
	case c:
		return allocGraph[T](st, n, bytes, classOf(t))
	}
	p, err := st.allocBytes(bytes, pool)
	if err != nil {
		return Slice[T]{}, err
	}
	st.ctx.ref()
	h := &allocHandle{class: classOf(t), fin: true}
	a := &h.own
	a.ctx, a.ptr, a.bytes = st.ctx, p, bytes
	a.home = st
	a.last.Store(st)
	a.solo.Store(st)
	runtime.SetFinalizer(h, finalizeAlloc)
	return Slice[T]{h: h, n: n}, nil
}

// Len is the number of elements.
func (x Slice[T]) Len() int { return x.n }

// Device is the device the memory is on (the zero Device for the zero
// Slice).
func (x Slice[T]) Device() Device {
	if x.h == nil {
		return Device{}
	}
	return x.h.a().ctx.dev
}

// Bytes is the size of the elements in bytes.
func (x Slice[T]) Bytes() int { return x.n * int(unsafe.Sizeof(*new(T))) }

// Slice returns the elements i to j-1, sharing the memory, as the Go
// expression s[i:j] does. An out-of-range or inverted pair is an error
// matching ErrLength.
func (x Slice[T]) Slice(i, j int) (Slice[T], error) {
	if x.h == nil {
		return Slice[T]{}, fmt.Errorf("cuda: Slice.Slice: %w", ErrNil)
	}
	if i < 0 || j < i || j > x.n {
		return Slice[T]{}, fmt.Errorf("cuda: Slice.Slice(%d, %d) of length %d: %w", i, j, x.n, ErrLength)
	}
	return Slice[T]{h: x.h, off: x.off + i, n: j - i}, nil
}

// DevicePtr is the device address of the first element, for calls through
// libcuda, or 0 after Free. The address is valid only until Free.
func (x Slice[T]) DevicePtr() libcuda.Deviceptr {
	if x.h == nil {
		return 0
	}
	a := x.h.a()
	if !a.mu.TryRLock() { // a Free
		return 0
	}
	defer a.mu.RUnlock()
	if a.freed {
		return 0
	}
	return a.ptr + libcuda.Deviceptr(uintptr(x.off)*unsafe.Sizeof(*new(T)))
}

// Free frees the allocation, ordered after the work of every stream that
// used it (cuMemFreeAsync on one of them, after cuStreamWaitEvent on the
// others): Free does not wait. While one of those streams is being
// captured (by Capture, or in a capture it joined by waiting for an
// event recorded in it, as the driver reports), the free waits for the
// captures to end (sync.Postpone). A graph that uses the Slice must not be launched after
// Free. It must be called on the Slice that Alloc
// returned (or one covering all of it); freeing a part is an error. A
// second Free is an error matching ErrFreed.
func (x Slice[T]) Free() error {
	if x.h == nil {
		return fmt.Errorf("cuda: Slice.Free: %w", ErrNil)
	}
	a := x.h.a()
	if a.global {
		return errors.New("cuda: Slice.Free of a module's variable (Global): it lives until Module.Close")
	}
	if uintptr(x.off) != 0 || uintptr(x.n)*unsafe.Sizeof(*new(T)) != a.bytes {
		return fmt.Errorf("cuda: Slice.Free of a part [%d:%d] of an allocation: free the Slice that Alloc returned", x.off, x.off+x.n)
	}
	x.h.stopRelease()
	return a.free()
}

// String describes the slice for logs: type and length, no address.
func (x Slice[T]) String() string {
	return fmt.Sprintf("cuda.Slice[%v](len %d)", reflect.TypeFor[T](), x.n)
}

// acquire read-locks the allocation for a use and returns the device
// address of the byte at off; release it with a.release.
func (a *alloc) acquire(off uintptr) (libcuda.Deviceptr, error) {
	// Never wait for the lock: a writer is a Free, which this use would
	// follow anyway (see lock order in doc.go).
	if !a.mu.TryRLock() {
		return 0, ErrFreed
	}
	if a.freed {
		a.mu.RUnlock()
		return 0, ErrFreed
	}
	return a.ptr + libcuda.Deviceptr(off), nil
}

// release records that work was submitted to st (when used) and
// unlocks what acquire locked.
func (a *alloc) release(st *streamState, used bool) {
	if used && a.solo.Load() != st {
		a.noteUse(st)
	}
	a.mu.RUnlock()
}

// noteUse records that work was submitted to st, unless st was the
// latest stream recorded. The caller holds a (acquire).
func (a *alloc) noteUse(st *streamState) {
	if a.last.Load() != st {
		a.record(st)
	}
}

// record adds st to the streams used.
func (a *alloc) record(st *streamState) {
	a.usemu.Lock()
	a.addUsedLocked(st)
	a.usemu.Unlock()
}

// addUsedLocked adds st to the streams used, once; a.usemu is held.
func (a *alloc) addUsedLocked(st *streamState) {
	if a.last.Load() != st && a.home != st && !slices.Contains(a.used, st) {
		a.used = append(a.used, st)
	}
	a.last.Store(st)
}

// free marks the allocation freed, then frees it after the work of the
// streams that used it. Uses in progress are over once the lock is taken.
func (a *alloc) free() error {
	a.mu.Lock()
	if a.freed {
		a.mu.Unlock()
		return fmt.Errorf("cuda: Slice.Free: %w", ErrFreed)
	}
	a.freed = true
	a.mu.Unlock()
	if a.bytes == 0 { // an empty Slice: no memory, no hold on the context
		return nil
	}
	var buf [4]*streamState
	used := a.takeUsed(buf[:0])
	if a.graph {
		if done, err := a.freeInGraph(used); done {
			return err
		}
	}
	switch c, err := anyCapturing(used); {
	case err != nil:
		// Unknown: freeing now could put the free into a graph.
		return fmt.Errorf("cuda: Slice.Free (the memory is kept): %w", err)
	case c:
		// An event recorded on a capturing stream, or a free submitted to
		// it, would go into the graph: free once the captures have ended.
		a.postponeFree(slices.Clone(used))
		return nil
	}
	return a.freeNow(used)
}

// takeUsed appends the streams used, the allocating one first, to buf
// and forgets them.
func (a *alloc) takeUsed(buf []*streamState) []*streamState {
	a.usemu.Lock()
	defer a.usemu.Unlock()
	if a.home != nil {
		buf = append(buf, a.home)
	}
	buf = append(buf, a.used...)
	a.home, a.used = nil, nil
	return buf
}

// postponeFree frees the memory once the captures through package graph
// have ended. A stream still captured then is captured outside package
// graph, whose end cannot be awaited: the memory is kept, and logged.
func (a *alloc) postponeFree(used []*streamState) {
	sync.Postpone(func() {
		c, err := anyCapturing(used)
		switch {
		case err == nil && c && sync.CapturesInProgress() > 0:
			a.postponeFree(used) // a capture began meanwhile
			return
		case err == nil && c:
			err = errors.New("a stream that used it is captured outside package graph; the memory is kept")
		case err == nil:
			err = a.freeNow(used)
		}
		if err != nil {
			logErr("freeing a Slice after a capture", err)
		}
	})
}

// anyCapturing says whether one of the open streams in used is being
// captured, as the driver says (a closed stream is not asked: its handle
// may be another stream's by now).
func anyCapturing(used []*streamState) (bool, error) {
	for _, u := range used {
		u.mu.RLock()
		c, err := false, error(nil)
		if !u.closed {
			c, err = u.capturing()
		}
		u.mu.RUnlock()
		if err != nil || c {
			return c, err
		}
	}
	return false, nil
}

// freeNow frees the memory after the work of the streams in used.
func (a *alloc) freeNow(used []*streamState) error {
	if a.graph {
		a.usemu.Lock()
		landed := a.landed
		a.usemu.Unlock()
		if !landed { // no launch allocated it: nothing to free
			return a.ctx.unref()
		}
	}
	if a.managed {
		return a.freeManaged(used)
	}
	if a.foreign {
		return a.releaseForeign(used)
	}
	if err := freeAfter(a.ctx, a.ptr, used); err != nil {
		// The memory stays allocated: the GPU may still use it.
		return err
	}
	return a.ctx.unref()
}

// freeAfter frees p in stream order after the work of every stream in
// used: it takes an event of each (one recorded now, or the final event of
// a closed stream), then frees on the first of them still open, after
// waiting for the events there (cuStreamWaitEvent, cuMemFreeAsync). When
// all are closed, a short-lived stream does it. At most one stream is
// locked at a time, so that Frees and Closes of several streams cannot
// wait for each other in a circle.
func freeAfter(ctx *ctxState, p libcuda.Deviceptr, used []*streamState) (err error) {
	marks := make([]mark, 0, len(used))
	defer func() {
		if derr := destroyMarks(marks); derr != nil && err == nil {
			err = derr
		}
	}()
	for _, u := range used {
		m, err := u.mark()
		if err != nil {
			return err
		}
		marks = append(marks, m)
	}
	var on *streamState
	for _, u := range used {
		if u.ctx != ctx {
			// A stream of another context (a peer copy): memory is freed
			// on a stream of its own context.
			continue
		}
		u.mu.RLock()
		if !u.closed {
			on = u
			break
		}
		u.mu.RUnlock()
	}
	if on != nil {
		defer on.mu.RUnlock()
	}
	return ctx.do(func() error {
		s := libcuda.Stream(0)
		if on != nil {
			s = on.raw
		} else {
			if err := libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
				return driverErr("cuStreamCreate", err)
			}
			defer func() {
				if err := libcuda.StreamDestroy(s); err != nil {
					logErr("destroying the stream of a Free", err)
				}
			}()
		}
		for _, m := range marks {
			if err := libcuda.StreamWaitEvent(s, m.ev, 0); err != nil {
				return driverErr("cuStreamWaitEvent", err)
			}
		}
		if err := libcuda.MemFreeAsync(p, s); err != nil {
			return driverErr("cuMemFreeAsync", err)
		}
		return nil
	})
}

// destroyMarks destroys the events made for a free (those it owns), all
// of them; the error is the first failure.
func destroyMarks(marks []mark) error {
	var first error
	for _, m := range marks {
		if m.own {
			if err := m.ctx.do(func() error { return libcuda.EventDestroy(m.ev) }); err != nil && first == nil {
				first = driverErr("cuEventDestroy", err)
			}
		}
	}
	return first
}

// mark is an event after the work submitted to a stream so far.
type mark struct {
	ctx *ctxState
	ev  libcuda.Event
	own bool // made for this Free: destroy it after
}

// mark returns an event after the stream's work: a new one recorded now
// in the stream's context, or the final event of a closed stream.
func (u *streamState) mark() (mark, error) {
	u.mu.RLock()
	defer u.mu.RUnlock()
	if u.closed {
		if u.final == 0 {
			return mark{}, errors.New("cuda: Free: a stream that used the memory was closed without its final event; the memory is kept")
		}
		return mark{ctx: u.ctx, ev: u.final}, nil
	}
	m := mark{ctx: u.ctx, own: true}
	err := u.ctx.do(func() error {
		if err := libcuda.EventCreate(&m.ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)); err != nil {
			return driverErr("cuEventCreate", err)
		}
		if err := libcuda.EventRecord(m.ev, u.raw); err != nil {
			if derr := libcuda.EventDestroy(m.ev); derr != nil {
				logErr("destroying an event that failed to record", derr)
			}
			return driverErr("cuEventRecord", err)
		}
		return nil
	})
	return m, err
}
