package cuda

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	gosync "sync"
	"sync/atomic"
	"weak"

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
	// What a launch reads lies in the first 64 bytes, one cache line:
	// the struct's size is a multiple of 64 (see pad), so the allocator
	// aligns it (TestHotFieldsShareACacheLine).
	mu        gosync.RWMutex // held for reading by calls that use raw; for writing by Close
	closed    bool
	unordered bool // Unordered: uses are neither ordered nor recorded
	raw       libcuda.Stream
	dv        *devState       // ctx.dv
	cu        libcuda.Context // ctx.cu
	ctx       *ctxState

	self weak.Pointer[streamState] // for the launch history, which must not keep the state
	ordFields
	final libcuda.Event // recorded at Close: the end of the stream's work
	// Capture and RunCached calls in progress on this value. It keeps
	// Close from destroying the stream before the capture begins or after
	// it ends; whether the stream is being captured is the driver's to
	// say (see capturing).
	inCapture atomic.Int32

	hostMu     gosync.Mutex  // guards hostErr and hostClosed; the trampoline takes it, never mu
	hostErr    error         // a host function's failure, for the next Sync
	hostClosed bool          // Close has run: failures are logged
	waited     atomic.Uint64 // the device's launches up to this number are done on this stream (a wait returned)

	// pad makes the size a multiple of 64 bytes; a field added above
	// takes from it (TestHotFieldsShareACacheLine says by how much).
	_ [40]byte
}

// StreamOption sets up a new stream.
type StreamOption func(*streamConfig)

type streamConfig struct {
	flags     libcuda.Stream_flags
	priority  int32
	unordered bool
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
	st := &streamState{ctx: cst, raw: raw, dv: cst.dv, cu: cst.cu}
	st.unordered = cfg.unordered
	st.self = weak.Make(st)
	s := &Stream{st: st}
	s.cleanup = runtime.AddCleanup(s, func(st *streamState) {
		dropped("Stream", "Close")
		if err := st.close(); err != nil && !errors.Is(err, ErrContextLost) {
			logErr("closing a dropped Stream", err)
		}
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
	if st.closed || st.dv.lost.Load() != nil {
		err := st.acquireErr(op)
		st.mu.RUnlock()
		return nil, err
	}
	return st, nil
}

// acquireErr is why acquire refuses the stream it holds: closed, or its
// context lost.
//
//go:noinline
func (st *streamState) acquireErr(op string) error {
	if st.closed {
		return closedErr("Stream", op)
	}
	return st.ctx.lostErr()
}

// Sync waits until the work submitted to the stream so far has finished
// (package sync's Stream: it spins briefly, then sleeps on a helper
// thread; ctx cancels the wait, not the work). After a host function of
// the stream panicked or called runtime.Goexit, the next Sync that waits
// to the end returns that failure (ErrHostFunc; see HostFunc).
func (s *Stream) Sync(ctx context.Context) error {
	st, err := s.acquire("Sync")
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	if err := st.syncLocked(ctx); err != nil {
		return err
	}
	// The wait covers every host function submitted before it: one that
	// failed has stored its failure by now.
	return st.takeHostErr()
}

// syncLocked waits for the stream; st.mu is held for reading.
func (st *streamState) syncLocked(ctx context.Context) error {
	n := st.ctx.dv.launches.Load()
	if err := sync.Stream(ctx, st.ctx.cu, st.raw); err != nil {
		return st.ctx.checkOn(st, err)
	}
	st.noteWaited(n)
	return nil
}

// Close destroys the stream (cuStreamDestroy). Work already submitted
// still runs; memory used on the stream is freed after it. Closing twice
// is an error matching ErrClosed, and so is closing a stream that is being
// captured (ErrCapturing), by a capture begun on it or one it joined by
// waiting for an event of a captured stream.
//
// A Close that fails (a driver call it makes fails) leaves the stream
// open and usable, with its work and the memory used on it as they were:
// close it again later, or let the garbage collector do it. In a lost
// context (ErrContextLost) Close returns the loss and changes nothing.
func (s *Stream) Close() error {
	if s == nil || s.st == nil {
		return nilErr("Stream", "Close")
	}
	err := s.st.close()
	if s.st.isClosed() {
		// Only now: a Close refused (a capture) or failed leaves the
		// stream to its cleanup if it is dropped later.
		s.cleanup.Stop()
	}
	return err
}

// isClosed says whether Close has destroyed the stream.
func (st *streamState) isClosed() bool {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.closed
}

// capturing asks the driver whether the stream is being captured
// (cuStreamIsCapturing, allowed in every capture mode): by a capture begun
// on it, or by one it joined by waiting for an event recorded in it. st.mu
// is held and the stream is open.
func (st *streamState) capturing() (bool, error) {
	c, err := sync.Capturing(st.raw)
	if err != nil {
		return false, fmt.Errorf("cuda: %w", err)
	}
	return c, nil
}

// close records the stream's final event and destroys the stream. When
// any of it fails, the stream stays open as it was: it is marked closed
// only once the event that marks the end of its work is recorded and the
// stream destroyed.
func (st *streamState) close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return closedErr("Stream", "Close")
	}
	if st.inCapture.Load() > 0 {
		return errors.Join(closedErr("Stream", "Close"), ErrCapturing)
	}
	if err := st.ctx.lostErr(); err != nil {
		// Every driver call would fail: the stream stays as it is, and
		// the loss is the error (logged once, when it was found).
		return err
	}
	switch c, err := st.capturing(); {
	case err != nil:
		return fmt.Errorf("cuda: Stream.Close: %w", err)
	case c:
		return errors.Join(closedErr("Stream", "Close"), ErrCapturing)
	}
	var ev libcuda.Event
	// ordMu keeps other streams' orderMark from recording on the handle
	// while it is destroyed; they read closed and final under it.
	st.ordMu.Lock()
	defer st.ordMu.Unlock()
	err := st.ctx.do(func() error {
		// The final event lets a later Free of memory used here wait for
		// the stream's work without the stream.
		if err := libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)); err != nil {
			ev = 0
			return driverErr("cuEventCreate", err)
		}
		err := libcuda.EventRecord(ev, st.raw)
		if err != nil {
			err = driverErr("cuEventRecord", err)
		} else if err = libcuda.StreamDestroy(st.raw); err != nil {
			err = driverErr("cuStreamDestroy", err)
		}
		if err != nil {
			// The stream stays open; the event is of no use.
			if derr := libcuda.EventDestroy(ev); derr != nil {
				err = errors.Join(err, driverErr("cuEventDestroy", derr))
			}
			ev = 0
		}
		return err
	})
	if ev == 0 {
		return fmt.Errorf("cuda: Stream.Close (the stream stays open): %w", err)
	}
	st.closed = true
	st.final = ev
	st.closeHostErr()
	// The event lives as long as something may wait for it: until the
	// state is unreachable. It keeps the context until then.
	runtime.AddCleanup(st, destroyEvent, eventRef{ctx: st.ctx, ev: ev})
	// err may be the failure to restore the thread's context: the stream
	// is destroyed all the same.
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
	// The driver is asked only while captures are in progress (Query
	// is polled): a stream that joined one is captured too.
	if st.inCapture.Load() > 0 {
		return false, fmt.Errorf("cuda: Stream.Query: %w", ErrCapturing)
	}
	if sync.CapturesInProgress() > 0 {
		switch c, err := st.capturing(); {
		case err != nil:
			return false, fmt.Errorf("cuda: Stream.Query: %w", err)
		case c:
			return false, fmt.Errorf("cuda: Stream.Query: %w", ErrCapturing)
		}
	}
	q := func() error { return libcuda.StreamQuery(st.raw) }
	err = sync.CaptureSafe(q)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, libcuda.CUDA_ERROR_NOT_READY):
		return false, nil
	}
	return false, driverErr("cuStreamQuery", err)
}
