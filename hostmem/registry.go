package hostmem

import (
	"errors"
	"fmt"
	"runtime"
	gosync "sync"
	"unsafe"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// kind says who made a registration and how it ends.
type kind int

const (
	registered kind = iota // cuMemHostRegister here; ends with cuMemHostUnregister
	allocated              // cuMemHostAlloc here; ends with cuMemFreeHost
	foreign                // registered by someone else; never ended here
	pageable               // not registered: the device reads it directly
)

// registration is one range of host memory known to the registry.
type registration struct {
	p          unsafe.Pointer // start; keeps Go memory reachable
	start, end uintptr
	kind       kind
	ctx        libcuda.Context
	ctxID      uint64        // ctx's unique id, 0 where unknown
	hold       hold          // on ctx, until the registration has ended
	refs       int           // buffers, releases in progress and leases holding it
	ending     chan struct{} // not nil while its unregister runs; closed after
	failed     bool          // its unregister failed: kept for good
	dropped    bool          // its context is gone, and the driver dropped it with it
	kept       int           // references of failed releases: never dropped
	phase      phase         // in use, retired, unregistering, gone or failed (see phase)
	pin        runtime.Pinner
}

func (r *registration) size() int64 { return int64(r.end - r.start) }

// retires reports whether r waits for a batch unregister once unused.
func (r *registration) retires() bool {
	return (r.kind == registered || r.kind == allocated) && !r.failed && r.phase != phaseGone
}

// registry holds every registration, sorted by address, non-overlapping.
type registry struct {
	mu      gosync.Mutex
	regs    index           // every registration, by address
	scratch []*registration // overlapping's answer
	retired int64           // bytes of unused registrations waiting for a batch
	limit   int64           // retired bytes that start a batch
	stats   counters
}

// counters are the numbers Stats reports that the registry keeps.
type counters struct {
	failures    int
	unregisters int64
	registers   int64
	dropped     int64 // registrations of contexts destroyed since, let go
}

// DefaultRetiredLimit is the budget of retired bytes past which a batch of
// unregisters starts.
const DefaultRetiredLimit = 256 << 20

var reg = &registry{limit: DefaultRetiredLimit}

// SetRetiredLimit sets the bytes of retired registrations past which they
// are unregistered in a batch, and returns the previous limit. 0 unregisters
// each registration as soon as it is retired.
func SetRetiredLimit(bytes int64) int64 {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	old := reg.limit
	reg.limit = bytes
	return old
}

// overlapping returns the registrations overlapping [start, end), in
// address order, in the registry's scratch space (valid until the next
// call); g.mu is held.
func (g *registry) overlapping(start, end uintptr) []*registration {
	clear(g.scratch)
	g.scratch = g.regs.overlapping(g.scratch[:0], start, end)
	return g.scratch
}

func (g *registry) insert(r *registration) { g.regs.insert(r) }

func (g *registry) remove(r *registration) { g.regs.remove(r) }

// acquire appends to dst the registrations covering the n bytes at p, each
// with a reference taken for the caller: existing ones are reused (retired
// ones revived) and the gaps are registered as mode says.
func (g *registry) acquire(dst []*registration, key ctxKey, p unsafe.Pointer, n uintptr, mode kind) ([]*registration, error) {
	start, end := uintptr(p), uintptr(p)+n
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		g.dropDead(start, end, key)
		if ending := g.ending(start, end); ending != nil {
			// An unregister of this memory is running: wait for it.
			g.mu.Unlock()
			<-ending
			g.mu.Lock()
			continue
		}
		fresh, err := g.fill(key, p, n, mode)
		if err != nil {
			return nil, err
		}
		cover := append(dst, g.overlapping(start, end)...)
		for _, r := range cover {
			if r.refs == 0 && r.retires() {
				g.retired -= r.size() // revived
				move(&r.phase, phaseInUse)
			}
			if !containsFresh(fresh, r) {
				r.refs++
			}
		}
		return cover, nil
	}
}

// ending returns the channel of an unregister running on memory of
// [start, end), or nil; g.mu is held.
func (g *registry) ending(start, end uintptr) chan struct{} {
	for _, r := range g.overlapping(start, end) {
		if r.ending != nil {
			return r.ending
		}
	}
	return nil
}

// fill registers the gaps between the registrations of the n bytes at p,
// in address order, and returns the new ones, each with one reference;
// g.mu is held.
func (g *registry) fill(key ctxKey, p unsafe.Pointer, n uintptr, mode kind) ([]*registration, error) {
	start, end := uintptr(p), uintptr(p)+n
	var fresh []*registration
	at := start
	g.scratch = append(g.overlapping(start, end), nil) // nil: the gap after the last one
	for _, r := range g.scratch {
		gapEnd := end
		if r != nil {
			gapEnd = min(r.start, end)
		}
		if gapEnd > at {
			f, err := g.register(key, unsafe.Add(p, at-start), gapEnd-at, mode)
			if f != nil { // registered, even where err says what failed after
				fresh = append(fresh, f)
			}
			if err != nil {
				for _, f := range fresh {
					g.insert(f)
					g.unref(f) // fresh ones retire; the next batch ends them
				}
				return nil, err
			}
		}
		if r != nil {
			at = max(at, r.end)
		}
	}
	for _, f := range fresh {
		g.insert(f)
	}
	return fresh, nil
}

// dropDead lets go of the registrations overlapping [start, end) whose
// context is gone: the driver dropped them when it destroyed the context,
// so they must not serve a wrap (their device addresses mean nothing in
// another context), and there is nothing to unregister. key is the
// wrapping context, alive.
func (g *registry) dropDead(start, end uintptr, key ctxKey) {
	var dead []*registration
	for _, r := range g.overlapping(start, end) {
		if r.phase == phaseGone || (r.ending == nil && contextGone(r, key)) {
			dead = append(dead, r)
		}
	}
	for _, r := range dead {
		if r.phase == phaseGone {
			g.remove(r)
			continue
		}
		g.dropLocked(r)
	}
}

// dropAllDead lets go of every registration whose context is gone, each
// context asked once. g.mu is held.
func (g *registry) dropAllDead() {
	var dead []*registration
	gone := map[ctxKey]bool{}
	g.regs.each(func(r *registration) {
		if r.ending != nil || r.dropped || r.phase == phaseGone || r.kind == foreign || r.kind == pageable {
			return
		}
		k := ctxKey{r.ctx, r.ctxID}
		isGone, asked := gone[k]
		if !asked {
			isGone = ctxGone(r.ctx, r.ctxID)
			gone[k] = isGone
		}
		if isGone {
			dead = append(dead, r)
		}
	})
	for _, r := range dead {
		g.dropLocked(r)
	}
}

// dropLocked lets go of r, whose context is gone with the registration:
// out of the registry, its memory unpinned. Buffers and leases that still
// hold it let go of nothing more (unref). g.mu is held.
func (g *registry) dropLocked(r *registration) {
	g.remove(r)
	if r.phase == phaseRetired && r.refs == 0 {
		g.retired -= r.size() // counted there only (unref, acquire, collect)
	}
	r.phase = phaseGone // from any phase: the driver ended it
	r.dropped = true
	g.stats.dropped++
	r.drop()
}

// contextGone reports whether r's context has been destroyed: the driver
// no longer knows its handle, or knows it as another context (another
// unique id, cuCtxGetId, which the driver never reuses). key is a context
// known alive. Where the driver cannot tell (no cuCtxGetId, another
// error), the context counts as alive.
func contextGone(r *registration, key ctxKey) bool {
	if r.kind == foreign || r.kind == pageable {
		return false // nothing of hostmem's to end
	}
	if r.ctx == key.ctx {
		return key.id != 0 && r.ctxID != 0 && r.ctxID != key.id
	}
	return ctxGone(r.ctx, r.ctxID)
}

// ctxGone reports whether the context with handle ctx and unique id id
// (0: unknown) has been destroyed.
func ctxGone(ctx libcuda.Context, id uint64) bool {
	var now uint64
	err := libcuda.CtxGetId(ctx, &now)
	switch {
	case err == nil:
		return id != 0 && now != id
	case errors.Is(err, libcuda.CUDA_ERROR_INVALID_CONTEXT), errors.Is(err, libcuda.CUDA_ERROR_CONTEXT_IS_DESTROYED):
		return true
	}
	return false
}

func containsFresh(fresh []*registration, r *registration) bool {
	for _, f := range fresh {
		if f == r {
			return true
		}
	}
	return false
}

// register makes one new registration of the n bytes at p, with one
// reference. It runs with g.mu held: registering does not fence the device.
// Where the driver registered the memory but putting the thread back after
// failed (its capture mode or its context), it returns the registration
// with the error: the memory is registered all the same, and the caller
// must record it.
func (g *registry) register(key ctxKey, p unsafe.Pointer, n uintptr, mode kind) (*registration, error) {
	ctx := key.ctx
	h, err := holdContext(ctx)
	if err != nil {
		return nil, err
	}
	r := &registration{p: p, start: uintptr(p), end: uintptr(p) + n, kind: mode, ctx: ctx, ctxID: key.id, hold: h, refs: 1, phase: phaseInUse}
	if mode == registered {
		made := false
		err := sync.RelaxedIn(ctx, func() error {
			if err := libcuda.MemHostRegister(p, uint64(n), uint32(libcuda.CU_MEMHOSTREGISTER_PORTABLE|libcuda.CU_MEMHOSTREGISTER_DEVICEMAP)); err != nil {
				return dl.Failed("", "cuMemHostRegister", err)
			}
			made = true
			return nil
		})
		if made {
			g.stats.registers++
		}
		switch {
		case err == nil:
		case made:
			// Restoring the thread failed after the register: the driver
			// holds the registration, so the registry must too.
			r.pin.Pin(p)
			return r, fmt.Errorf("hostmem: registering %#x+%d: %w", uintptr(p), n, err)
		case errors.Is(err, libcuda.CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) && registeredElsewhere(ctx, p, n):
			r.kind = foreign
		default:
			h.release()
			return nil, fmt.Errorf("hostmem: registering %#x+%d: %w", uintptr(p), n, err)
		}
	}
	if mode != allocated { // Go memory: pinned while registered
		r.pin.Pin(p)
	}
	return r, nil
}

// registeredElsewhere reports whether all of [p, p+n) is page-locked by
// someone else: the driver knows flags for its first and last byte.
func registeredElsewhere(ctx libcuda.Context, p unsafe.Pointer, n uintptr) bool {
	var flags uint32
	return sync.RelaxedIn(ctx, func() error {
		if err := libcuda.MemHostGetFlags(&flags, p); err != nil {
			return err
		}
		return libcuda.MemHostGetFlags(&flags, unsafe.Add(p, n-1))
	}) == nil
}

// unref drops one reference; g.mu is held. An unused registration that
// retires waits for a batch; the others are let go at once.
func (g *registry) unref(r *registration) {
	r.refs--
	if r.refs > 0 || r.dropped {
		return
	}
	if r.retires() {
		move(&r.phase, phaseRetired)
		g.retired += r.size()
		return
	}
	if r.failed {
		return // kept for good
	}
	g.remove(r)
	r.drop()
}

// keep makes one reference on each of regs permanent: their memory stays
// registered and pinned for good.
func (g *registry) keep(regs []*registration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range regs {
		r.kept++
	}
}

// drop unpins r's memory and lets it and its context go.
func (r *registration) drop() {
	r.pin.Unpin()
	r.p = nil
	r.hold.release()
}

// release drops one reference on each of regs and reports whether the
// retired bytes are past the budget.
func (g *registry) release(regs []*registration) (over bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range regs {
		g.unref(r)
	}
	return g.retired > g.limit
}

// overLimit reports whether the retired bytes are past the budget.
func (g *registry) overLimit() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.retired > g.limit
}

// collect marks every retired registration as unregistering and returns
// them; wraps of their memory wait until each has ended. Registrations of
// contexts destroyed since, retired or kept, are let go first: the driver
// dropped them with their context.
func (g *registry) collect() []*registration {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dropAllDead()
	var batch []*registration
	g.regs.each(func(r *registration) {
		if r.refs == 0 && r.retires() && r.ending == nil {
			move(&r.phase, phaseUnregistering)
			r.ending = make(chan struct{})
			g.retired -= r.size()
			batch = append(batch, r)
		}
	})
	return batch
}

// ended records the end of r's unregister: gone, or kept for good after
// a failure (logged once).
func (g *registry) ended(r *registration, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stats.unregisters++
	if err != nil && ctxGone(r.ctx, r.ctxID) {
		// The context was destroyed with the registration in it: the
		// driver dropped it, there was nothing to unregister.
		g.dropLocked(r)
		err = nil
	} else if err != nil {
		g.stats.failures++
		move(&r.phase, phaseFailed)
		r.failed = true // stays in the registry, pinned, for good
		logKept(r, err)
	} else if !r.dropped {
		move(&r.phase, phaseGone)
		g.remove(r)
		r.drop()
	}
	close(r.ending)
	r.ending = nil
}
