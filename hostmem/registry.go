package hostmem

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	gosync "sync"
	"unsafe"

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
	regs    []*registration
	orphans []*registration // of contexts destroyed since: kept pinned for good
	gone    int             // registrations ended but not compacted away yet
	retired int64           // bytes of unused registrations waiting for a batch
	limit   int64           // retired bytes that start a batch
	stats   counters
}

// counters are the numbers Stats reports that the registry keeps.
type counters struct {
	failures    int
	unregisters int64
	registers   int64
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

// overlapping returns the index range of registrations overlapping
// [start, end).
func (g *registry) overlapping(start, end uintptr) (int, int) {
	i := sort.Search(len(g.regs), func(i int) bool { return g.regs[i].end > start })
	j := i
	for j < len(g.regs) && g.regs[j].start < end {
		j++
	}
	return i, j
}

func (g *registry) insert(r *registration) {
	i := sort.Search(len(g.regs), func(i int) bool { return g.regs[i].start >= r.start })
	g.regs = append(g.regs, nil)
	copy(g.regs[i+1:], g.regs[i:])
	g.regs[i] = r
}

func (g *registry) remove(r *registration) {
	i := sort.Search(len(g.regs), func(i int) bool { return g.regs[i].start >= r.start })
	if i < len(g.regs) && g.regs[i] == r {
		g.regs = append(g.regs[:i], g.regs[i+1:]...)
	}
}

// acquire appends to dst the registrations covering the n bytes at p, each
// with a reference taken for the caller: existing ones are reused (retired
// ones revived) and the gaps are registered as mode says.
func (g *registry) acquire(dst []*registration, key ctxKey, p unsafe.Pointer, n uintptr, mode kind) ([]*registration, error) {
	start, end := uintptr(p), uintptr(p)+n
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		g.orphan(start, end, key)
		i, j := g.overlapping(start, end)
		var ending chan struct{}
		for _, r := range g.regs[i:j] {
			if r.ending != nil {
				ending = r.ending
			}
		}
		if ending != nil {
			// An unregister of this memory is running: wait for it.
			g.mu.Unlock()
			<-ending
			g.mu.Lock()
			continue
		}
		// Register the gaps, in address order.
		var fresh []*registration
		at := start
		for k := i; k <= j; k++ {
			var r *registration // nil: the gap after the last one
			gapEnd := end
			if k < j {
				r = g.regs[k]
				gapEnd = min(r.start, end)
			}
			if gapEnd > at {
				r, err := g.register(key, unsafe.Add(p, at-start), gapEnd-at, mode)
				if err != nil {
					for _, f := range fresh {
						g.insert(f)
						g.unref(f) // fresh ones retire; the next batch ends them
					}
					return nil, err
				}
				fresh = append(fresh, r)
			}
			if r != nil {
				at = max(at, r.end)
			}
		}
		for _, f := range fresh {
			g.insert(f)
		}
		i, j = g.overlapping(start, end)
		cover := append(dst, g.regs[i:j]...)
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

// orphan removes the registrations overlapping [start, end) that have
// ended, and takes those whose context is gone out of the registry: a context's registrations may end with it,
// so they must not serve a wrap. Their memory stays pinned, for good,
// and the loss is logged once each. key is the wrapping context, alive.
func (g *registry) orphan(start, end uintptr, key ctxKey) {
	i, j := g.overlapping(start, end)
	for k := j - 1; k >= i; k-- {
		r := g.regs[k]
		if r.phase == phaseGone { // ended in a batch not compacted yet
			g.regs = append(g.regs[:k], g.regs[k+1:]...)
			g.gone--
			continue
		}
		if r.ending != nil || contextAlive(r, key) {
			continue
		}
		g.regs = append(g.regs[:k], g.regs[k+1:]...)
		if r.refs == 0 && r.retires() {
			g.retired -= r.size()
		}
		r.failed = true
		r.phase = phaseFailed
		g.orphans = append(g.orphans, r)
		g.stats.failures++
		logKept(r, fmt.Errorf("context %#x is gone", uintptr(r.ctx)))
	}
}

// contextAlive reports whether r's context still exists: it is the
// wrapping one, or the driver still knows its handle with its id.
func contextAlive(r *registration, key ctxKey) bool {
	if r.kind == foreign || r.kind == pageable || r.failed {
		return true // nothing of hostmem's to end
	}
	if r.ctx == key.ctx {
		return r.ctxID == key.id
	}
	var id uint64
	err := libcuda.CtxGetId(r.ctx, &id)
	switch {
	case errors.Is(err, libcuda.ErrSymbol):
		return true // no ids: cannot tell
	case err != nil:
		return false
	}
	return id == r.ctxID
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
func (g *registry) register(key ctxKey, p unsafe.Pointer, n uintptr, mode kind) (*registration, error) {
	ctx := key.ctx
	h, err := holdContext(ctx)
	if err != nil {
		return nil, err
	}
	r := &registration{p: p, start: uintptr(p), end: uintptr(p) + n, kind: mode, ctx: ctx, ctxID: key.id, hold: h, refs: 1, phase: phaseInUse}
	if mode == registered {
		err := sync.RelaxedIn(ctx, func() error {
			return libcuda.MemHostRegister(p, uint64(n), uint32(libcuda.CU_MEMHOSTREGISTER_PORTABLE|libcuda.CU_MEMHOSTREGISTER_DEVICEMAP))
		})
		switch {
		case err == nil:
			g.stats.registers++
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
	if r.refs > 0 {
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
// them; wraps of their memory wait until each has ended.
func (g *registry) collect() []*registration {
	g.mu.Lock()
	defer g.mu.Unlock()
	var batch []*registration
	for _, r := range g.regs {
		if r.refs == 0 && r.retires() && r.ending == nil {
			move(&r.phase, phaseUnregistering)
			r.ending = make(chan struct{})
			g.retired -= r.size()
			batch = append(batch, r)
		}
	}
	return batch
}

// ended records the end of r's unregister: gone, or kept for good after
// a failure (logged once).
func (g *registry) ended(r *registration, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stats.unregisters++
	if err != nil {
		g.stats.failures++
		move(&r.phase, phaseFailed)
		r.failed = true // stays in the registry, pinned, for good
		logKept(r, err)
	} else {
		// Left in place until the batch's compaction (compact): removing
		// each from the sorted slice would cost O(n) a registration.
		move(&r.phase, phaseGone)
		g.gone++
		r.drop()
	}
	close(r.ending)
	r.ending = nil
}

// compact removes the registrations that are gone, in one pass.
func (g *registry) compact() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone == 0 {
		return
	}
	n := 0
	for _, r := range g.regs {
		if r.phase != phaseGone {
			g.regs[n] = r
			n++
		}
	}
	clear(g.regs[n:])
	g.regs = g.regs[:n]
	g.gone = 0
}
