package cuda

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	gosync "sync"
	"sync/atomic"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Stream is a queue of GPU work in a Context (a CUstream). Work submitted
// to one stream runs in order; work of different streams may overlap.
// A Stream's methods are safe for concurrent use; Close waits for calls in
// progress on it to return (not for its GPU work).
//
// A Stream dropped without Close is destroyed by the garbage collector,
// and a warning is logged.
type Stream struct {
	st      *streamState
	cleanup runtime.Cleanup
}

// streamState is what memory used on the stream remembers of it; it does
// not point back to the Stream.
type streamState struct {
	ctx *ctxState
	raw libcuda.Stream

	mu        gosync.RWMutex // held for reading by calls that use raw; for writing by Close
	closed    bool
	final     libcuda.Event // recorded at Close: the end of the stream's work
	capturing atomic.Int32  // captures through Capture in progress
}

// StreamOption sets up a new stream.
type StreamOption func(*streamConfig)

type streamConfig struct {
	flags    libcuda.Stream_flags
	priority int32
}

// NonBlocking makes the stream not wait for the legacy default stream, nor
// the legacy stream for it (CU_STREAM_NON_BLOCKING).
func NonBlocking() StreamOption {
	return func(c *streamConfig) { c.flags |= libcuda.CU_STREAM_NON_BLOCKING }
}

// Priority sets the stream's priority: lower numbers are higher
// priorities, within Context.StreamPriorities; the driver clamps others.
func Priority(p int) StreamOption {
	return func(c *streamConfig) { c.priority = int32(p) }
}

// NewStream creates a stream in the context (cuStreamCreateWithPriority).
func (c *Context) NewStream(opts ...StreamOption) (*Stream, error) {
	cst, err := c.live("NewStream")
	if err != nil {
		return nil, err
	}
	var cfg streamConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if !cst.tryRef() {
		return nil, closedErr("Context", "NewStream")
	}
	var raw libcuda.Stream
	err = cst.do(func() error { return libcuda.StreamCreateWithPriority(&raw, uint32(cfg.flags), cfg.priority) })
	if err != nil {
		return nil, errors.Join(driverErr("cuStreamCreateWithPriority", err), cst.unref())
	}
	st := &streamState{ctx: cst, raw: raw}
	s := &Stream{st: st}
	s.cleanup = runtime.AddCleanup(s, func(st *streamState) {
		dropped("Stream", "Close")
		st.close()
	}, st)
	return s, nil
}

// Raw is the driver's handle of the stream, for calls through libcuda
// and packages sync, graph and hostmem. Do not destroy it.
func (s *Stream) Raw() libcuda.Stream {
	if s == nil || s.st == nil {
		return 0
	}
	return s.st.raw
}

// acquire returns the state of an open stream, read-locked: release it
// with st.mu.RUnlock.
func (s *Stream) acquire(op string) (*streamState, error) {
	if s == nil || s.st == nil {
		return nil, nilErr("Stream", op)
	}
	st := s.st
	// Never wait for the lock: a writer is a Close (see lock order in
	// doc.go).
	if !st.mu.TryRLock() {
		return nil, closedErr("Stream", op)
	}
	if st.closed {
		st.mu.RUnlock()
		return nil, closedErr("Stream", op)
	}
	return st, nil
}

// Sync waits until the work submitted to the stream so far has finished
// (package sync's Stream: it spins briefly, then sleeps on a helper
// thread; ctx cancels the wait, not the work).
func (s *Stream) Sync(ctx context.Context) error {
	st, err := s.acquire("Sync")
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	return st.syncLocked(ctx)
}

// syncLocked waits for the stream; st.mu is held for reading.
func (st *streamState) syncLocked(ctx context.Context) error {
	return sync.Stream(ctx, st.ctx.cu, st.raw)
}

// Close destroys the stream (cuStreamDestroy). Work already submitted
// still runs; memory used on the stream is freed after it. Closing twice
// is an error matching ErrClosed, and so is closing a stream that is being
// captured (ErrCapturing).
func (s *Stream) Close() error {
	if s == nil || s.st == nil {
		return nilErr("Stream", "Close")
	}
	st := s.st
	if st.capturing.Load() > 0 {
		return errors.Join(closedErr("Stream", "Close"), ErrCapturing)
	}
	s.cleanup.Stop()
	return st.close()
}

// close records the stream's final event and destroys the stream.
func (st *streamState) close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return closedErr("Stream", "Close")
	}
	if st.capturing.Load() > 0 {
		return ErrCapturing
	}
	st.closed = true
	var ev libcuda.Event
	err := st.ctx.do(func() error {
		// The final event lets a later Free of memory used here wait for
		// the stream's work without the stream.
		if err := libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)); err != nil {
			ev = 0
			return driverErr("cuEventCreate", err)
		}
		if err := libcuda.EventRecord(ev, st.raw); err != nil {
			return driverErr("cuEventRecord", err)
		}
		if err := libcuda.StreamDestroy(st.raw); err != nil {
			return driverErr("cuStreamDestroy", err)
		}
		return nil
	})
	st.final = ev
	if ev != 0 {
		// The event lives as long as something may wait for it: until the
		// state is unreachable. It keeps the context until then.
		runtime.AddCleanup(st, destroyEvent, eventRef{ctx: st.ctx, ev: ev})
	} else {
		st.ctx.unref()
	}
	return err
}

// eventRef is an event and the context it holds.
type eventRef struct {
	ctx *ctxState
	ev  libcuda.Event
}

// destroyEvent destroys an event no one can wait for any more and drops
// its hold on the context.
func destroyEvent(r eventRef) {
	if err := r.ctx.do(func() error { return libcuda.EventDestroy(r.ev) }); err != nil {
		logErr("destroying a stream's final event", err)
	}
	if err := r.ctx.unref(); err != nil {
		logErr("releasing the context", err)
	}
}

// Query reports whether the work submitted to the stream so far has
// finished, without waiting (one cuStreamQuery, in relaxed capture mode
// while captures are in progress so that it cannot break another
// goroutine's capture). A stream being captured has no work of its own to
// finish: querying it is an error matching ErrCapturing.
func (s *Stream) Query() (bool, error) {
	st, err := s.acquire("Query")
	if err != nil {
		return false, err
	}
	defer st.mu.RUnlock()
	if st.capturing.Load() > 0 {
		return false, fmt.Errorf("cuda: Stream.Query: %w", ErrCapturing)
	}
	q := func() error { return libcuda.StreamQuery(st.raw) }
	ran, err := sync.IfNoCapture(q)
	if !ran {
		err = sync.Relaxed(q)
	}
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, libcuda.CUDA_ERROR_NOT_READY):
		return false, nil
	}
	return false, driverErr("cuStreamQuery", err)
}
