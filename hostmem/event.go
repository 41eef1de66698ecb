package hostmem

import (
	"fmt"
	"log/slog"
	gosync "sync"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Events mark the end of a buffer's uses. Creating and destroying them
// takes driver locks that other threads' launches wait for, so completed
// events of primary contexts are kept for reuse. A kept event holds its
// context (holdContext): an event must never outlive its context, which a
// program may release at any time. Drain lets them all go. They are kept by
// the context's handle and unique id: a handle that comes back for another
// context (a primary context reset and made again, say) must not get the
// events of the one before.
var pool struct {
	mu   gosync.Mutex
	free map[ctxKey][]pooledEvent
}

type pooledEvent struct {
	ev   libcuda.Event
	hold hold
}

// maxPooledEvents bounds the events kept per context. A loop that wraps,
// uses and frees as fast as it can has a few hundred uses in flight between
// the owner's rounds; past the bound, events are created and destroyed,
// which stalls other threads' launches.
const maxPooledEvents = 4096

// getEvent returns an event of the context k with a hold on it; events of
// held (primary) contexts may be kept for reuse afterwards.
func getEvent(k ctxKey) (ev libcuda.Event, h hold, err error) {
	pool.mu.Lock()
	if n := len(pool.free[k]); n > 0 {
		p := pool.free[k][n-1]
		pool.free[k] = pool.free[k][:n-1]
		pool.mu.Unlock()
		return p.ev, p.hold, nil
	}
	pool.mu.Unlock()
	ctx := k.ctx
	h, err = holdContext(ctx)
	if err != nil {
		return 0, hold{}, err
	}
	made := false
	err = libcuda.WithContext(ctx, func() error {
		if err := libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)); err != nil {
			return dl.Failed("", "cuEventCreate", err)
		}
		made = true
		return nil
	})
	switch {
	case made && err != nil:
		// The event exists; only giving the thread its context back
		// failed. Dropped here it would leak: use it.
		slog.Error("hostmem: event created, but restoring the thread's context after failed", "err", err)
	case err != nil:
		h.release()
		return 0, hold{}, err
	}
	return ev, h, nil
}

// putEvent keeps a use's completed event for reuse, or destroys it.
func putEvent(u use) {
	if u.hold.primary {
		pool.mu.Lock()
		if pool.free == nil {
			pool.free = make(map[ctxKey][]pooledEvent)
		}
		k := ctxKey{u.ctx, u.ctxID}
		if len(pool.free[k]) < maxPooledEvents {
			pool.free[k] = append(pool.free[k], pooledEvent{u.ev, u.hold})
			pool.mu.Unlock()
			return
		}
		pool.mu.Unlock()
	}
	destroyEvent(u.ev, u.hold)
}

func destroyEvent(ev libcuda.Event, h hold) {
	// cuEventDestroy needs neither the event's context current nor
	// relaxed mode: it is allowed during captures (see the conformance
	// matrix's cuEventCreate+Destroy row).
	if err := libcuda.EventDestroy(ev); err != nil {
		slog.Warn("hostmem: destroying an event: cuEventDestroy", "event", fmt.Sprintf("%#x", uintptr(ev)), "err", err)
	}
	h.release()
}

// flushEvents destroys the kept events and lets their contexts go.
func flushEvents() {
	pool.mu.Lock()
	free := pool.free
	pool.free = nil
	pool.mu.Unlock()
	for k, evs := range free {
		// One switch of context and capture mode for all of its events.
		err := sync.RelaxedIn(k.ctx, func() error {
			for _, p := range evs {
				if err := libcuda.EventDestroy(p.ev); err != nil {
					slog.Warn("hostmem: destroying an event: cuEventDestroy", "event", fmt.Sprintf("%#x", uintptr(p.ev)), "err", err)
				}
			}
			return nil
		})
		if err != nil {
			slog.Warn("hostmem: destroying kept events", "events", len(evs), "err", err)
		}
		for _, p := range evs {
			p.hold.release()
		}
	}
}
