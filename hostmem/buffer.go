package hostmem

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	gosync "sync"
	"unsafe"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

var (
	// ErrEmpty is returned for a nil or empty slice, or a zero size.
	ErrEmpty = errors.New("hostmem: empty memory")
	// ErrNoContext is returned for a wrap without a context.
	ErrNoContext = errors.New("hostmem: no context")
	// ErrFreed is returned for a use of a buffer after Free.
	ErrFreed = errors.New("hostmem: buffer already freed")
	// ErrUntrackedCapture is returned by Use on a stream that is being
	// captured, but not through package graph: no lease can be attached,
	// so the memory is kept for the life of the process.
	ErrUntrackedCapture = errors.New("hostmem: stream captured outside package graph")
)

// Buffer is host memory the GPU can use. Its methods are safe for
// concurrent use.
type Buffer struct {
	st   *state
	gen  uint64 // st's generation for this buffer (see state)
	p    unsafe.Pointer
	size uintptr
}

// state is what the release of a buffer needs. It does not point back to
// the Buffer, so the Buffer can be collected and its cleanup run.
//
// Once its release has ended, a state is reused for a later buffer (a
// steady wrap/use/free loop then makes the garbage collector run far less
// often: a state is most of what a cycle allocates). Its generation
// counts the reuses: a Buffer's methods, under mu, treat a state of
// another generation as their buffer freed.
type state struct {
	mu  gosync.Mutex
	gen uint64
	stateFields
}

// stateFields are a state's fields that start at zero for each buffer.
type stateFields struct {
	ctx     libcuda.Context
	ctxID   uint64 // ctx's unique id (cuCtxGetId), 0 where unknown
	p       unsafe.Pointer
	size    uintptr
	dptr    libcuda.Deviceptr
	regs    []*registration
	hold    hold   // on ctx, if it is a primary context
	uses    []use  // one per stream used, with the event last recorded there
	unknown bool   // some use cannot be waited for by events: wait for the context
	leased  bool   // a use was leased to a graph
	release func() // drops a lease's references (see lease); made at the first
	freed   bool
	holds   int   // Holds in progress: a Free's hand-over waits for the last (hold.go)
	phase   phase // wrapped, in use, freed; then the owner's (see phase)
	waiting int   // uses the owner waits for; the owner's
	broken  bool  // a use's event failed: the release failed; the owner's
	// Room for the common case without more allocations.
	regs1 [1]*registration
	uses1 [1]use
}

type use struct {
	s   libcuda.Stream
	id  uint64 // the stream's unique id; 0 for none (see queue.go)
	seq uint64 // of the event's last record (see record)
	ev  libcuda.Event
	ctx libcuda.Context // the stream's, where the event lives
	// ctxID is ctx's unique id (cuCtxGetId; 0 where unknown): kept events
	// are told apart by it as well as the handle, which the driver may
	// give to a context made after ctx is destroyed; and the owner asks
	// whether the context still exists before it queries the event, which
	// the driver destroys with its context (a query of it then crashed the
	// process on the H200).
	ctxID uint64
	hold  hold // on ctx, for the event
}

// Wrap makes the memory of s usable by the GPU in context ctx: it
// registers it (device-mapped, portable), or reuses a registration that
// covers it, and keeps it referenced and pinned until the buffer is freed
// and the GPU work that used it is done.
//
// # Memory
//
// s must not be resliced beyond its length for GPU use, and its contents
// may change under the GPU's feet only as the program's own
// synchronization allows. Keep using s from Go as usual. T must hold no
// Go pointers (CheckElem).
func Wrap[T any](ctx libcuda.Context, s []T) (*Buffer, error) {
	if err := CheckElem(reflect.TypeFor[T]()); err != nil {
		return nil, err
	}
	var zero T
	n := uintptr(len(s)) * unsafe.Sizeof(zero)
	if n == 0 {
		return nil, ErrEmpty
	}
	return wrap(ctx, unsafe.Pointer(unsafe.SliceData(s)), n, true)
}

// Alloc allocates size bytes of pinned, device-mapped, portable host
// memory outside the Go heap (cuMemHostAlloc) with the same lifecycle as a
// wrapped slice: Free releases it once the GPU is done, and cuMemFreeHost
// runs in the batches that unregister retired memory.
func Alloc(ctx libcuda.Context, size int) (*Buffer, error) {
	if _, err := ByteSize(size, 1); err != nil {
		return nil, err
	}
	if size == 0 {
		return nil, ErrEmpty
	}
	return wrap(ctx, nil, uintptr(size), false)
}

// wrap makes a buffer of the n bytes at p (Go memory), or of n bytes it
// allocates (goMem false, p nil).
func wrap(ctx libcuda.Context, p unsafe.Pointer, n uintptr, goMem bool) (*Buffer, error) {
	if ctx == 0 {
		return nil, ErrNoContext
	}
	dev, err := deviceOf(ctx)
	if err != nil {
		return nil, err
	}
	mode := registered
	switch {
	case !goMem:
		mode = allocated
	case dev.pageable:
		mode = pageable
	}
	// The buffer's events must not outlive its context.
	h, err := holdDevice(ctx, dev)
	if err != nil {
		return nil, err
	}
	if !goMem {
		made := false
		err := sync.RelaxedIn(ctx, func() error {
			if err := libcuda.MemHostAlloc(&p, uint64(n), uint32(libcuda.CU_MEMHOSTALLOC_PORTABLE|libcuda.CU_MEMHOSTALLOC_DEVICEMAP)); err != nil {
				return dl.Failed("", fmt.Sprintf("cuMemHostAlloc(%d)", n), err)
			}
			made = true
			return nil
		})
		if err != nil {
			if made { // restoring the thread failed after: free what was allocated
				err = errors.Join(err, sync.RelaxedIn(ctx, func() error {
					if err := libcuda.MemFreeHost(p); err != nil {
						return dl.Failed("", "cuMemFreeHost", err)
					}
					return nil
				}))
			}
			h.release()
			return nil, fmt.Errorf("hostmem: %w", err)
		}
	}
	st := newState()
	st.mu.Lock() // a stale Buffer of an earlier generation may look at it
	st.ctx, st.ctxID, st.p, st.size, st.hold, st.dptr = ctx, dev.id, p, n, h, libcuda.Deviceptr(uintptr(p))
	st.uses = st.uses1[:0]
	gen := st.gen
	st.mu.Unlock()
	regs, err := reg.acquire(st.regs1[:0], ctxKey{ctx, dev.id}, p, n, mode)
	if err != nil {
		if !goMem { // no registration owns the allocation
			err = errors.Join(err, sync.RelaxedIn(ctx, func() error {
				if err := libcuda.MemFreeHost(p); err != nil {
					return dl.Failed("hostmem", "cuMemFreeHost", err)
				}
				return nil
			}))
		}
		h.release()
		return nil, err
	}
	st.regs = regs
	if mode != pageable && !dev.hostPointer {
		// The device maps registered memory elsewhere: ask, and refuse a
		// range that several registrations cover.
		err := sync.RelaxedIn(ctx, func() error {
			if err := libcuda.MemHostGetDevicePointer(&st.dptr, p, 0); err != nil {
				return dl.Failed("", "cuMemHostGetDevicePointer", err)
			}
			return nil
		})
		if err != nil {
			err = fmt.Errorf("hostmem: %w", err)
		} else if len(regs) > 1 {
			err = errors.New("hostmem: the range spans registrations and the device maps them apart")
		}
		if err != nil {
			if reg.release(regs) {
				checkBudget()
			}
			h.release()
			return nil, err
		}
	}
	b := &Buffer{st: st, gen: gen, p: p, size: n}
	// A finalizer, not runtime.AddCleanup: AddCleanup allocates twice (the
	// argument's box and the call's closure), a finalizer that is a plain
	// function not at all, and a Buffer is the one allocation a steady
	// wrap/use/free cycle makes. A Buffer points to nothing that points
	// back to it, so no cycle keeps it from being finalized.
	runtime.SetFinalizer(b, (*Buffer).collected)
	return b, nil
}

// collected is the finalizer of a Buffer that became unreachable without
// Free: its release goes to the owner as Free's would.
func (b *Buffer) collected() { b.st.free(b.gen) }

// freeStates holds states whose release has ended, for new buffers: a
// list under a lock, not a sync.Pool, which the garbage collector empties
// at each of its cycles (every state is then allocated anew, and a loop's
// garbage is what makes the collector run), and which drops a part of what
// it is given under the race detector. It keeps at most maxFreeStates
// (248 bytes each), as many as a loop has releases in flight.
var freeStates struct {
	mu   gosync.Mutex
	list []*state
}

const maxFreeStates = 4096

// newState returns a state for a new buffer, one whose release has ended
// if there is one.
func newState() *state {
	freeStates.mu.Lock()
	if n := len(freeStates.list); n > 0 {
		st := freeStates.list[n-1]
		freeStates.list[n-1] = nil
		freeStates.list = freeStates.list[:n-1]
		freeStates.mu.Unlock()
		return st
	}
	freeStates.mu.Unlock()
	return new(state)
}

// reuse makes st, whose release has ended, available for a new buffer;
// nothing of hostmem refers to it any more (a stale Buffer of it sees
// another generation).
func (st *state) reuse() {
	st.mu.Lock()
	st.gen++
	st.stateFields = stateFields{}
	st.mu.Unlock()
	freeStates.mu.Lock()
	if len(freeStates.list) < maxFreeStates {
		freeStates.list = append(freeStates.list, st)
	}
	freeStates.mu.Unlock()
}

// lock locks b's state and reports whether it is still b's and not freed
// (or freed while a Hold is in progress: see Hold); it stays locked either
// way.
func (b *Buffer) lock() (live bool) {
	b.st.mu.Lock()
	return b.st.gen == b.gen && (!b.st.freed || b.st.holds > 0)
}

// DevicePtr is the address of the buffer for the GPU, or 0 after Free
// (once no Hold is in progress).
func (b *Buffer) DevicePtr() libcuda.Deviceptr {
	defer b.st.mu.Unlock()
	if !b.lock() {
		return 0
	}
	return b.st.dptr
}

// Size is the buffer's length in bytes.
func (b *Buffer) Size() int { return int(b.size) }

// Pointer is the buffer's host address (of the wrapped slice's first
// element, or of the allocation).
func (b *Buffer) Pointer() unsafe.Pointer { return b.p }

// Use records that work just submitted to stream s uses the buffer: its
// release waits for that work. Call it after submitting the work (and again
// after more work). On a stream being captured through package graph, the
// memory is leased to the capture's graph instead.
//
// The legacy stream and the per-thread stream are tracked like others
// outside captures (the per-thread stream as the calling thread's: hold
// runtime.LockOSThread from submission to Use); while captures are in
// progress, a use on them makes the release wait for the whole context,
// except a use inside the calling thread's own capture of its per-thread
// stream, which leases the memory to that capture.
func (b *Buffer) Use(s libcuda.Stream) error {
	st := b.st
	defer st.mu.Unlock()
	if !b.lock() {
		return ErrFreed
	}
	if s != 0 && s != libcuda.CU_STREAM_LEGACY && s != libcuda.CU_STREAM_PER_THREAD {
		return useError(st.use(s, false))
	}
	if s == libcuda.CU_STREAM_PER_THREAD && sync.CapturesInProgress() > 0 {
		// The calling thread may be capturing its own per-thread stream
		// (the legacy stream cannot be captured): then the memory is
		// leased to that capture, as on any other stream.
		var capturing bool
		err := libcuda.WithContext(st.ctx, func() (err error) {
			capturing, err = sync.Capturing(s)
			return err
		})
		if err == nil && capturing {
			return useError(st.leaseOrKeep(s))
		}
	}
	// These handles mean the current context's streams: make the buffer's
	// context current. An event recorded on them during a capture could
	// join or break it, so none is recorded while one is in progress, and
	// none begins until it is.
	called := false
	ran, err := sync.IfNoCapture(func() error {
		return libcuda.WithContext(st.ctx, func() error {
			called = true
			return st.use(s, true)
		})
	})
	if !ran || !called {
		st.unknown = true // not tracked: the release waits for the context
	}
	return useError(err)
}

// useError is Use's error for err, that of a driver call named in it.
func useError(err error) error {
	if err == nil || err == ErrUntrackedCapture {
		return err
	}
	return fmt.Errorf("hostmem: Use: %w", err)
}

// use records a use on s with a new event, or with the event of an earlier
// use on the same stream; st.mu is held. On a stream being captured it
// leases the memory instead, and calls nothing else: the driver refuses
// even cuStreamGetId on a capturing stream, and invalidates the capture.
// When no event can be recorded, the release waits for the whole context:
// the work was submitted already.
func (st *state) use(s libcuda.Stream, special bool) error {
	// While captures are in progress, a use is most likely inside one:
	// Lease finds it (on the stream the capture began on, with no driver
	// call), and nothing else is asked.
	if sync.CapturesInProgress() > 0 && st.lease(s, false) {
		return nil
	}
	capturing, err := sync.Capturing(s)
	if err != nil {
		err = dl.Failed("", "cuStreamIsCapturing", err)
	} else if capturing {
		return st.leaseOrKeep(s)
	}
	if err == nil {
		err = st.track(s, special)
	}
	if err != nil {
		st.unknown = true
		return err
	}
	return nil
}

// track records an event for the work submitted to s so far. A stream is
// matched by its unique id as well as its handle, which the driver may
// give to a new stream; CU_STREAM_PER_THREAD names a different stream on
// each thread, so it is never matched. Its errors name the driver call.
func (st *state) track(s libcuda.Stream, special bool) error {
	u := use{s: s, ctx: st.ctx, ctxID: st.ctxID}
	if !special {
		// The stream's unique id lets the owner order its uses (0: no id,
		// see queue.go).
		if err := libcuda.StreamGetId(s, &u.id); err != nil && !errors.Is(err, libcuda.ErrSymbol) {
			return dl.Failed("", "cuStreamGetId", err)
		}
	}
	i := 0
	for i < len(st.uses) && (st.uses[i].s != s || st.uses[i].id != u.id || s == libcuda.CU_STREAM_PER_THREAD) {
		i++
	}
	if i == len(st.uses) {
		// The event belongs to the stream's context, which may be another
		// device's: registered memory is portable.
		if !special {
			var err error
			if u.ctx, u.ctxID, err = streamContext(s, u.id); err != nil {
				return err
			}
		}
		var err error
		if u.ev, u.hold, err = getEvent(ctxKey{u.ctx, u.ctxID}); err != nil {
			return err
		}
		st.uses = append(st.uses, u)
		st.inUse()
	}
	if err := record(&st.uses[i]); err != nil {
		return dl.Failed("", "cuEventRecord", err)
	}
	return nil
}

// inUse marks the first use of a wrapped buffer; st.mu is held.
func (st *state) inUse() {
	if st.phase == phaseWrapped {
		move(&st.phase, phaseInUse)
	}
}

// lease leases the buffer's registrations to the capture through package
// graph in progress on s, and reports whether it did: the graph keeps
// them until it and the executable graphs made from it are done with them.
// When it did not, the references it took are dropped again, unless keep
// is set: then they stay for good. st.mu is held, and the registry is
// locked after it.
func (st *state) lease(s libcuda.Stream, keep bool) bool {
	if st.release == nil {
		// Made once per buffer, for all its leases: each holds one
		// reference on each registration, and the function drops one.
		// It keeps a copy of the registrations, since a lease outlives
		// the state, which is reused with its room for them once its own
		// release has ended.
		regs := append([]*registration(nil), st.regs...)
		st.release = func() {
			if reg.release(regs) {
				checkBudget()
			}
		}
	}
	// The references are taken first: the lease may be released as soon
	// as Lease has attached it.
	regs := st.regs
	reg.mu.Lock()
	for _, r := range regs {
		r.refs++
	}
	reg.mu.Unlock()
	// Each lease takes its own references and its release drops them: a
	// later capture's lease of the same buffer may stand for this one
	// (graph.LeaseCounted).
	if graph.LeaseCounted(s, st.release) {
		st.leased = true
		st.inUse()
		return true
	}
	if keep {
		reg.keep(regs)
		st.leased = true
		st.inUse()
		return false
	}
	// The buffer holds references of its own: none of these is the last.
	reg.mu.Lock()
	for _, r := range regs {
		r.refs--
	}
	reg.mu.Unlock()
	return false
}

// leaseOrKeep leases the buffer's registrations to the capture in
// progress on s, which is being captured; when that capture was not made
// through package graph, the memory is kept for the life of the process.
func (st *state) leaseOrKeep(s libcuda.Stream) error {
	if !st.lease(s, true) {
		return ErrUntrackedCapture
	}
	return nil
}

// Free releases the buffer: at once for the caller, in the background for
// the memory, which stays registered and pinned until the GPU work that
// used it is done. Freeing twice does nothing.
func (b *Buffer) Free() error {
	runtime.SetFinalizer(b, nil)
	b.st.free(b.gen)
	return nil
}

// streamContexts caches the context of streams, with the context's unique
// id, by the streams' unique id, which the driver never gives to another
// stream: a use on a stream that has been used before needs no
// cuStreamGetCtx or cuCtxGetId. It is emptied when it grows past
// maxStreamContexts entries.
var streamContexts struct {
	mu gosync.Mutex
	m  map[uint64]ctxKey
}

const maxStreamContexts = 1024

// streamContext returns the context of stream s, whose unique id is id (0
// for none), and the context's unique id (0 where the driver has none).
func streamContext(s libcuda.Stream, id uint64) (libcuda.Context, uint64, error) {
	if id != 0 {
		streamContexts.mu.Lock()
		k, ok := streamContexts.m[id]
		streamContexts.mu.Unlock()
		if ok {
			return k.ctx, k.id, nil
		}
	}
	var k ctxKey
	if err := libcuda.StreamGetCtx(s, &k.ctx); err != nil {
		return 0, 0, dl.Failed("", "cuStreamGetCtx", err)
	}
	if err := libcuda.CtxGetId(k.ctx, &k.id); err != nil && !errors.Is(err, libcuda.ErrSymbol) {
		return 0, 0, dl.Failed("", "cuCtxGetId", err)
	}
	if id != 0 {
		streamContexts.mu.Lock()
		if streamContexts.m == nil || len(streamContexts.m) >= maxStreamContexts {
			streamContexts.m = make(map[uint64]ctxKey)
		}
		streamContexts.m[id] = k
		streamContexts.mu.Unlock()
	}
	return k.ctx, k.id, nil
}
