package hostmem

import (
	"fmt"
	"log/slog"
	gosync "sync"
	"time"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Events mark the end of a buffer's uses. Creating and destroying them
// takes driver locks that other threads' launches wait for, so completed
// events of primary contexts are kept for reuse. A kept event holds its
// context (holdContext): an event must never outlive its context, which a
// program may release at any time. Drain lets them all go.
var pool struct {
	mu   gosync.Mutex
	free map[libcuda.Context][]pooledEvent
}

type pooledEvent struct {
	ev     libcuda.Event
	unhold func()
}

// maxPooledEvents bounds the events kept per context.
const maxPooledEvents = 256

// getEvent returns an event of ctx, which must be current, with a hold on
// ctx; pooled says whether it may be kept for reuse afterwards.
func getEvent(ctx libcuda.Context) (ev libcuda.Event, unhold func(), pooled bool, err error) {
	pool.mu.Lock()
	if n := len(pool.free[ctx]); n > 0 {
		p := pool.free[ctx][n-1]
		pool.free[ctx] = pool.free[ctx][:n-1]
		pool.mu.Unlock()
		return p.ev, p.unhold, true, nil
	}
	pool.mu.Unlock()
	unhold, held, err := holdContext(ctx)
	if err != nil {
		return 0, nil, false, err
	}
	if err := libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)); err != nil {
		unhold()
		return 0, nil, false, err
	}
	return ev, unhold, held, nil
}

// putEvent keeps a use's completed event for reuse, or destroys it.
func putEvent(u use) {
	if u.pooled {
		pool.mu.Lock()
		if pool.free == nil {
			pool.free = make(map[libcuda.Context][]pooledEvent)
		}
		if len(pool.free[u.ctx]) < maxPooledEvents {
			pool.free[u.ctx] = append(pool.free[u.ctx], pooledEvent{u.ev, u.unhold})
			pool.mu.Unlock()
			return
		}
		pool.mu.Unlock()
	}
	destroyEvent(u.ctx, u.ev, u.unhold)
}

func destroyEvent(ctx libcuda.Context, ev libcuda.Event, unhold func()) {
	if err := driverCall(ctx, func() error { return libcuda.EventDestroy(ev) }); err != nil {
		slog.Warn("hostmem: destroying an event", "event", fmt.Sprintf("%#x", uintptr(ev)), "err", err)
	}
	unhold()
}

// flushEvents destroys the kept events and lets their contexts go.
func flushEvents() {
	pool.mu.Lock()
	free := pool.free
	pool.free = nil
	pool.mu.Unlock()
	for ctx, evs := range free {
		for _, p := range evs {
			destroyEvent(ctx, p.ev, p.unhold)
		}
	}
}

// releasePolicy is how a release waits for a buffer's uses. Its latency
// matters little, and each query is a driver call beside the program's own
// launches: after a first query it sleeps between queries, from 10µs up
// to 1ms, and blocks no thread.
var releasePolicy = sync.Policy{Mode: sync.Polling, Spin: time.Nanosecond, Yield: time.Nanosecond, MaxSleep: time.Millisecond}
