package hostmem

import (
	"log/slog"
	gosync "sync"
	"time"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Events mark the end of a buffer's uses. Creating and destroying them
// takes driver locks that launches from other threads wait for, so they are
// kept for reuse, per context.
var events struct {
	mu   gosync.Mutex
	free map[libcuda.Context][]libcuda.Event
}

// maxFreeEvents bounds the events kept per context.
const maxFreeEvents = 1024

// getEvent returns an event of ctx, which must be current.
func getEvent(ctx libcuda.Context) (libcuda.Event, error) {
	events.mu.Lock()
	if n := len(events.free[ctx]); n > 0 {
		ev := events.free[ctx][n-1]
		events.free[ctx] = events.free[ctx][:n-1]
		events.mu.Unlock()
		return ev, nil
	}
	events.mu.Unlock()
	var ev libcuda.Event
	err := libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING))
	return ev, err
}

// putEvent keeps a completed event of ctx for reuse.
func putEvent(ctx libcuda.Context, ev libcuda.Event) {
	events.mu.Lock()
	if events.free == nil {
		events.free = make(map[libcuda.Context][]libcuda.Event)
	}
	if len(events.free[ctx]) < maxFreeEvents {
		events.free[ctx] = append(events.free[ctx], ev)
		ev = 0
	}
	events.mu.Unlock()
	if ev != 0 {
		if err := driverCall(ctx, func() error { return libcuda.EventDestroy(ev) }); err != nil {
			slog.Warn("hostmem: destroying a spare event", "err", err)
		}
	}
}

// releasePolicy is how a release waits for a buffer's uses. Its latency
// matters little, and each query is a driver call beside the program's own
// launches: after a first query it sleeps between queries, from 10µs up
// to 1ms, and blocks no thread.
var releasePolicy = sync.Policy{Mode: sync.Polling, Spin: time.Nanosecond, Yield: time.Nanosecond, MaxSleep: time.Millisecond}
