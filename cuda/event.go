package cuda

import (
	"context"
	"runtime"
	gosync "sync"
	"time"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Event marks a point in a stream's work (a CUevent): it completes when
// the work submitted to the stream before it has finished. Its methods are
// safe for concurrent use.
//
// An Event dropped without Close is destroyed by the garbage collector,
// and a warning is logged.
type Event struct {
	st      *eventState
	cleanup runtime.Cleanup
}

type eventState struct {
	ctx    *ctxState
	raw    libcuda.Event
	mu     gosync.RWMutex
	closed bool
}

// Record creates an event and records it on the stream, after the work
// submitted so far (cuEventCreate, cuEventRecord). It can time that work
// (Elapsed).
//
// An event recorded while the stream is being captured belongs to the
// capture: do not Query or Sync it (see package sync).
func (s *Stream) Record() (*Event, error) {
	st, err := s.acquire("Record")
	if err != nil {
		return nil, err
	}
	defer st.mu.RUnlock()
	var ev libcuda.Event
	err = st.ctx.do(func() error {
		if err := libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DEFAULT)); err != nil {
			return driverErr("cuEventCreate", err)
		}
		if err := libcuda.EventRecord(ev, st.raw); err != nil {
			if derr := libcuda.EventDestroy(ev); derr != nil {
				logErr("destroying an event that failed to record", derr)
			}
			return driverErr("cuEventRecord", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	st.ctx.ref()
	es := &eventState{ctx: st.ctx, raw: ev}
	e := &Event{st: es}
	e.cleanup = runtime.AddCleanup(e, func(es *eventState) {
		dropped("Event", "Close")
		if err := es.close(); err != nil {
			logErr("destroying a dropped event", err)
		}
	}, es)
	return e, nil
}

// Wait makes the work submitted to the stream from now on wait until the
// event has completed (cuStreamWaitEvent). The host does not wait.
func (s *Stream) Wait(e *Event) error {
	st, err := s.acquire("Wait")
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	es, err := e.acquire("Wait")
	if err != nil {
		return err
	}
	defer es.mu.RUnlock()
	err = st.ctx.do(func() error { return libcuda.StreamWaitEvent(st.raw, es.raw, 0) })
	if err != nil {
		return driverErr("cuStreamWaitEvent", err)
	}
	return nil
}

// acquire returns the state of an open event, read-locked.
func (e *Event) acquire(op string) (*eventState, error) {
	if e == nil || e.st == nil {
		return nil, nilErr("Event", op)
	}
	es := e.st
	es.mu.RLock()
	if es.closed {
		es.mu.RUnlock()
		return nil, closedErr("Event", op)
	}
	return es, nil
}

// Raw is the driver's handle of the event. Do not destroy it.
func (e *Event) Raw() libcuda.Event {
	if e == nil || e.st == nil {
		return 0
	}
	return e.st.raw
}

// Query reports whether the event has completed, without waiting (one
// cuEventQuery, made so that it cannot break another goroutine's capture).
func (e *Event) Query() (bool, error) {
	es, err := e.acquire("Query")
	if err != nil {
		return false, err
	}
	defer es.mu.RUnlock()
	return sync.EventDone(es.raw)
}

// Sync waits until the event has completed (package sync's Event; ctx
// cancels the wait).
func (e *Event) Sync(ctx context.Context) error {
	es, err := e.acquire("Sync")
	if err != nil {
		return err
	}
	defer es.mu.RUnlock()
	return sync.Event(ctx, es.raw)
}

// Elapsed is the GPU time between two completed events, a recorded before
// b (cuEventElapsedTime, about half a microsecond of resolution).
func Elapsed(a, b *Event) (time.Duration, error) {
	as, err := a.acquire("Elapsed")
	if err != nil {
		return 0, err
	}
	defer as.mu.RUnlock()
	bs, err := b.acquire("Elapsed")
	if err != nil {
		return 0, err
	}
	defer bs.mu.RUnlock()
	var ms float32
	if err := libcuda.EventElapsedTime(&ms, as.raw, bs.raw); err != nil {
		return 0, driverErr("cuEventElapsedTime", err)
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// Close destroys the event (cuEventDestroy); a stream waiting for it still
// waits. Closing twice is an error matching ErrClosed.
func (e *Event) Close() error {
	if e == nil || e.st == nil {
		return nilErr("Event", "Close")
	}
	e.cleanup.Stop()
	return e.st.close()
}

func (es *eventState) close() error {
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.closed {
		return closedErr("Event", "Close")
	}
	es.closed = true
	err := es.ctx.do(func() error { return libcuda.EventDestroy(es.raw) })
	if err != nil {
		err = driverErr("cuEventDestroy", err)
	}
	if uerr := es.ctx.unref(); uerr != nil && err == nil {
		err = uerr
	}
	return err
}
