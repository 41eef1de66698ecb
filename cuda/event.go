package cuda

import (
	"context"
	"errors"
	"fmt"
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
	flags  libcuda.Event_flags
	mu     gosync.RWMutex
	closed bool
}

// EventOption configures an event that NewEvent makes: DisableTiming,
// BlockingSync, Interprocess. The zero EventOption changes nothing.
type EventOption struct {
	flags libcuda.Event_flags // added to the event's flags
}

// DisableTiming makes an event that cannot time work (Elapsed fails on
// it) and costs less to record and wait for
// (CU_EVENT_DISABLE_TIMING): the choice for events that only order
// streams.
func DisableTiming() EventOption {
	return EventOption{flags: libcuda.CU_EVENT_DISABLE_TIMING}
}

// BlockingSync makes a host thread that synchronizes the event through
// the driver sleep instead of spinning (CU_EVENT_BLOCKING_SYNC).
// Event.Sync waits without burning a core either way (package sync).
func BlockingSync() EventOption {
	return EventOption{flags: libcuda.CU_EVENT_BLOCKING_SYNC}
}

// Interprocess makes an event that another process can open through the
// driver's IPC calls (CU_EVENT_INTERPROCESS). The driver requires such an
// event not to time work: Interprocess implies DisableTiming.
func Interprocess() EventOption {
	return EventOption{flags: libcuda.CU_EVENT_INTERPROCESS | libcuda.CU_EVENT_DISABLE_TIMING}
}

// NewEvent creates an event in the context, not yet recorded
// (cuEventCreate): record it with Stream.RecordEvent, as often as needed.
// Without options it can time work, as Stream.Record's events do. A Sync
// or Query of an event never recorded finds it complete, as the driver
// does.
func NewEvent(ctx *Context, opts ...EventOption) (*Event, error) {
	cst, err := ctx.hold("NewEvent")
	if err != nil {
		return nil, err
	}
	defer cst.drop()
	var flags libcuda.Event_flags
	for _, o := range opts {
		flags |= o.flags
	}
	var ev libcuda.Event
	err = cst.do(func() error { return libcuda.EventCreate(&ev, uint32(flags)) })
	if err != nil {
		return nil, driverErr("cuEventCreate", err)
	}
	return newEvent(cst, ev, flags), nil
}

// newEvent wraps a created event; it holds the context.
func newEvent(cst *ctxState, ev libcuda.Event, flags libcuda.Event_flags) *Event {
	cst.ref()
	es := &eventState{ctx: cst, raw: ev, flags: flags}
	e := &Event{st: es}
	e.cleanup = runtime.AddCleanup(e, func(es *eventState) {
		dropped("Event", "Close")
		if err := es.close(); err != nil {
			logErr("destroying a dropped event", err)
		}
	}, es)
	return e
}

// RecordEvent records e on the stream, after the work submitted so far
// (cuEventRecord): e then completes when that work has finished, and
// streams that Wait for e from now on wait for that work. A record
// replaces the event's previous one; waits already submitted keep waiting
// for what they waited for. e must belong to the stream's context.
// RecordEvent allocates nothing, so one event can serve every iteration
// of a loop.
//
// Inside a capture, the record belongs to the capture (see Record).
func (s *Stream) RecordEvent(e *Event) error {
	st, err := s.acquire("RecordEvent")
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	es, err := e.acquire("RecordEvent")
	if err != nil {
		return err
	}
	defer es.mu.RUnlock()
	if es.ctx.cu != st.ctx.cu {
		return errors.New("cuda: Stream.RecordEvent: the event and the stream belong to different contexts")
	}
	if err := st.ctx.do(func() error { return libcuda.EventRecord(es.raw, st.raw) }); err != nil {
		return driverErr("cuEventRecord", err)
	}
	return nil
}

// Record creates an event and records it on the stream, after the work
// submitted so far (cuEventCreate, cuEventRecord). It can time that work
// (Elapsed). A loop that records an event every iteration can make one
// with NewEvent and record it again with RecordEvent instead.
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
	return newEvent(st.ctx, ev, libcuda.CU_EVENT_DEFAULT), nil
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
	// Never wait for the lock: a writer is a Close (see lock order in
	// doc.go).
	if !es.mu.TryRLock() {
		return nil, closedErr("Event", op)
	}
	if es.closed {
		es.mu.RUnlock()
		return nil, closedErr("Event", op)
	}
	if err := es.ctx.lostErr(); err != nil {
		es.mu.RUnlock()
		return nil, err
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
	done, err := sync.EventDone(es.raw)
	return done, es.ctx.check(err)
}

// Sync waits until the event has completed (package sync's Event; ctx
// cancels the wait).
func (e *Event) Sync(ctx context.Context) error {
	es, err := e.acquire("Sync")
	if err != nil {
		return err
	}
	defer es.mu.RUnlock()
	return es.ctx.check(sync.Event(ctx, es.raw))
}

// Elapsed is the GPU time between two completed events, a recorded before
// b (cuEventElapsedTime, about half a microsecond of resolution).
//
// Both must have completed: Elapsed does not wait. While either is still
// pending (its stream has not reached it), the driver answers
// CUDA_ERROR_NOT_READY and Elapsed returns an error that says so and
// matches ErrNotReady; Sync b (or its stream) first. An event made with
// DisableTiming, or never recorded, cannot be timed: an error.
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
	if (as.flags|bs.flags)&libcuda.CU_EVENT_DISABLE_TIMING != 0 {
		return 0, errors.New("cuda: Elapsed: an event made with DisableTiming cannot time work")
	}
	var ms float32
	if err := libcuda.EventElapsedTime(&ms, as.raw, bs.raw); err != nil {
		if errors.Is(err, libcuda.CUDA_ERROR_NOT_READY) {
			return 0, fmt.Errorf("cuda: Elapsed: an event has not completed yet (Sync the later one first): %w", driverErr("cuEventElapsedTime", err))
		}
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
