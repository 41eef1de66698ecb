package graph

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	gosync "sync"
	"sync/atomic"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// DefaultMode is the capture mode to use when nothing calls for another:
// thread-local. A global capture is invalidated by potentially unsafe
// calls that any other goroutine of the program makes in global mode;
// a thread-local one refuses them only on the capturing thread, where the
// captured function runs. See the package documentation.
const DefaultMode = libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL

// ErrInvalidated is matched (errors.Is) by the error of a capture that the
// driver invalidated.
var ErrInvalidated = errors.New("graph: capture invalidated")

// Capture captures the work that f issues on stream s into a graph, in
// the given capture mode, and returns the graph; the caller destroys it.
//
// f runs on the calling goroutine, locked to its OS thread from the begin
// of the capture to its end, with s's context current (the thread's
// previous context is made current again after). It receives s. Work that
// f issues on s, or on streams that join the capture through events
// recorded on s, goes into the graph instead of running.
//
// When f returns an error, or the driver invalidated the capture, Capture
// returns a *CaptureError and destroys what was captured. When f panics,
// the capture is ended, what it made is destroyed and the panic goes on.
//
// When ending the capture fails and the driver still captures s after
// Capture has tried again, the capture stays counted in progress
// (InProgress) until the next Capture on s ends it first, so that no
// release machinery invalidates it meanwhile.
//
// s must be a stream of the caller's: the legacy default stream cannot be
// captured. CU_STREAM_PER_THREAD means the per-thread stream of the
// capturing thread, whose context must be current when Capture is called.
func Capture(s libcuda.Stream, mode libcuda.StreamCaptureMode, f func(s libcuda.Stream) error) (*Graph, error) {
	if err := checkCapture(s, f); err != nil {
		return nil, err
	}
	raw, cu, l, err := captureRaw(s, mode, f)
	if err != nil {
		return nil, err
	}
	return newGraph(raw, cu, l), nil
}

// checkCapture refuses what cannot be captured.
func checkCapture(s libcuda.Stream, f func(s libcuda.Stream) error) error {
	if s == 0 || s == libcuda.CU_STREAM_LEGACY {
		return errors.New("graph: the legacy default stream cannot be captured; capture a stream created with cuStreamCreate")
	}
	if f == nil {
		return errors.New("graph: Capture: nil function")
	}
	return nil
}

// captureRaw is Capture without the Graph: it returns the driver's graph,
// the stream's context and what the capture leased (nil when nothing),
// with one reference for the caller. The capture has a record of its own
// (Cached's runs reuse theirs, and make their context current
// themselves: see Cached.Run).
func captureRaw(s libcuda.Stream, mode libcuda.StreamCaptureMode, f func(s libcuda.Stream) error) (raw libcuda.Graph, cu libcuda.Context, l *leases, err error) {
	if err := libcuda.StreamGetCtx(s, &cu); err != nil {
		return 0, 0, nil, fmt.Errorf("graph: capture of %s: the stream's context: %w", streamName(s), dl.Failed("", "cuStreamGetCtx", err))
	}
	ran := false
	werr := libcuda.WithContext(cu, func() error {
		ran = true
		raw, l, err = runCapture(s, mode, f, new(capture))
		return nil
	})
	if werr != nil { // making the context current, or restoring it, failed
		err = errors.Join(err, fmt.Errorf("graph: capture of %s: the thread's context (capture ran: %v): %w", streamName(s), ran, werr))
		if raw != 0 { // no graph with an error: the caller would drop it
			if derr := destroyGraph(raw); derr != nil {
				err = errors.Join(err, fmt.Errorf("graph: Destroy: %w", derr)) // what l holds is kept
			} else {
				l.unref()
			}
			raw, l = 0, nil
		}
	}
	return raw, cu, l, err
}

// endCapture ends the capture of s and destroys the graph it made, if it
// made one: for captures that went wrong.
func endCapture(s libcuda.Stream) error {
	var raw libcuda.Graph
	err := libcuda.StreamEndCapture(s, &raw)
	if err != nil {
		err = dl.Failed("", "cuStreamEndCapture", err)
	}
	if raw != 0 {
		if derr := libcuda.GraphDestroy(raw); derr != nil {
			err = errors.Join(err, fmt.Errorf("destroying the captured graph: %w", dl.Failed("", "cuGraphDestroy", derr)))
		}
	}
	return err
}

// runCapture runs the capture on the locked thread, s's context current,
// with c as its record.
func runCapture(s libcuda.Stream, mode libcuda.StreamCaptureMode, f func(libcuda.Stream) error, c *capture) (libcuda.Graph, *leases, error) {
	if err := endStale(s); err != nil {
		return 0, nil, err
	}
	entry := sync.StartCaptureWith(&c.entry)
	if err := libcuda.StreamBeginCapture(s, mode); err != nil {
		entry.End()
		return 0, nil, fmt.Errorf("graph: cannot begin capturing %s in %s: %w%s", streamName(s), modeName(mode), dl.Failed("", "cuStreamBeginCapture", err), beginHint(err))
	}
	// The capture's id is asked for now only on the per-thread stream,
	// whose captures Lease finds by id alone (see capture).
	var id uint64
	if s == libcuda.CU_STREAM_PER_THREAD {
		var status libcuda.StreamCaptureStatus
		if err := libcuda.StreamGetCaptureInfo(s, &status, &id, nil, nil, nil, nil); err != nil {
			eerr := endCapture(s)
			entry.End()
			return 0, nil, errors.Join(fmt.Errorf("graph: capture of %s: %w", streamName(s), dl.Failed("", "cuStreamGetCaptureInfo", err)), eerr)
		}
	}
	c.begin(s, id)

	done := false
	defer func() {
		if done {
			return
		}
		// f panicked or called runtime.Goexit: end the capture and drop
		// what it made; the panic goes on. Ending an invalidated capture
		// fails, which is nothing to report; only a failed destroy is.
		if err := endCapture(s); err != nil && !errors.Is(err, libcuda.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
			slog.Error("graph: ending the capture of a function that panicked", "err", err)
		}
		entry.End()
		c.end().unref()
	}()

	ferr := f(s)
	var raw libcuda.Graph
	eerr := libcuda.StreamEndCapture(s, &raw)
	done = true
	stuck := false
	if eerr != nil {
		eerr = dl.Failed("", "cuStreamEndCapture", eerr)
		if rerr := unstick(s); rerr != nil {
			eerr = errors.Join(eerr, rerr)
			stuck = errors.Is(rerr, errStillCapturing)
		}
	}
	if stuck {
		// The driver still captures s: a capture stays registered, so
		// that nothing meanwhile makes the calls that would invalidate it,
		// until the next Capture on s ends it (endStale). It is a new
		// registration, taken before this one ends (the count never drops
		// to zero between), since this one may be a Cached's, reused.
		keepStale(s, sync.StartCapture())
	}
	// This capture's registration ends; postponed work may run when no
	// other capture is registered.
	entry.End()
	l := c.end()

	if ferr == nil && eerr == nil && raw != 0 {
		return raw, l, nil
	}
	// The end of an invalidated capture says so.
	invalidated := errors.Is(eerr, libcuda.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
	err := &CaptureError{Stream: s, Mode: mode, Invalidated: invalidated, Err: ferr, End: eerr}
	if raw != 0 {
		if derr := libcuda.GraphDestroy(raw); derr != nil {
			err.End = errors.Join(err.End, fmt.Errorf("destroying the captured graph: %w", dl.Failed("", "cuGraphDestroy", derr)))
		}
	}
	if !invalidated && eerr != nil {
		slog.Error("graph: ending a capture failed; the capture is unregistered and what it leases is released", "stream", streamName(s), "err", eerr)
	}
	l.unref()
	return 0, nil, err
}

// unstick ends the capture of s again, up to unstickTries times, while a
// failed end leaves the stream capturing, so that the stream stays usable.
// When s is still capturing after them (the error matches
// errStillCapturing), the caller keeps a capture registered for s
// (keepStale), so that no capture goes on unregistered.
func unstick(s libcuda.Stream) error {
	var errs []error
	for range unstickTries {
		capturing, err := sync.Capturing(s)
		if err != nil {
			return errors.Join(append(errs, dl.Failed("", "cuStreamIsCapturing", err))...)
		}
		if !capturing {
			return errors.Join(errs...)
		}
		if err := endCapture(s); err != nil && !errors.Is(err, libcuda.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
			errs = append(errs, fmt.Errorf("ending the capture again: %w", err))
		}
	}
	return errors.Join(append(errs, fmt.Errorf("%s: %w", streamName(s), errStillCapturing))...)
}

var errStillCapturing = errors.New("the stream is still being captured")

// Captures whose end failed unstickTries times with the stream still
// capturing, by stream: each stays registered (package sync's captures in
// progress) until a later Capture on its stream ends it.
var stale struct {
	mu gosync.Mutex
	by map[libcuda.Stream]*sync.CaptureEntry
	n  atomic.Int32 // len(by), read without mu
}

func keepStale(s libcuda.Stream, e *sync.CaptureEntry) {
	stale.mu.Lock()
	defer stale.mu.Unlock()
	if stale.by == nil {
		stale.by = map[libcuda.Stream]*sync.CaptureEntry{}
	}
	if old := stale.by[s]; old != nil && old != e {
		old.End()
	}
	stale.by[s] = e
	stale.n.Store(int32(len(stale.by)))
}

// endStale ends the capture left on s by an earlier Capture whose end
// failed, and then its registration; it fails, keeping both, while s
// stays capturing. It runs on the thread that will capture s.
func endStale(s libcuda.Stream) error {
	if stale.n.Load() == 0 { // the common case: no lock
		return nil
	}
	stale.mu.Lock()
	e := stale.by[s]
	delete(stale.by, s)
	stale.n.Store(int32(len(stale.by)))
	stale.mu.Unlock()
	if e == nil {
		return nil
	}
	if err := unstick(s); errors.Is(err, errStillCapturing) {
		keepStale(s, e)
		return fmt.Errorf("graph: %s is still being captured by an earlier capture whose end failed: %w", streamName(s), err)
	}
	e.End()
	return nil
}

const unstickTries = 4

// CaptureError is the error of a capture that failed: the captured
// function returned an error, or the driver invalidated the capture or
// refused to end it. The graph was not made, or was destroyed.
type CaptureError struct {
	Stream libcuda.Stream            // the stream the capture began on
	Mode   libcuda.StreamCaptureMode // the capture's mode
	// Invalidated is true when the driver invalidated the capture.
	Invalidated bool
	// Err is what the captured function returned. When the capture was
	// invalidated and Err is a capture error (CUDA_ERROR_STREAM_CAPTURE_*,
	// CUDA_ERROR_CAPTURED_EVENT), it is the error of the call that broke it.
	Err error
	// End is what ending the capture returned.
	End error
}

func (e *CaptureError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "graph: capture of %s in %s", streamName(e.Stream), modeName(e.Mode))
	switch {
	case e.Invalidated && e.Err != nil && isCaptureError(e.Err):
		fmt.Fprintf(&b, " was invalidated by a call the captured function made: %v", e.Err)
	case e.Invalidated:
		b.WriteString(" was invalidated by a call that the captured function did not report" +
			" (the driver does not say which): a potentially unsafe call (synchronize, query," +
			" allocate, free, register) on the capturing thread")
		if e.Mode == libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL {
			b.WriteString(" or on another thread in global mode")
		}
		b.WriteString(", a query of an event recorded in the capture, or cuCtxSynchronize on any thread")
		if e.Err != nil {
			fmt.Fprintf(&b, "; the captured function failed too: %v", e.Err)
		}
	case e.Err != nil:
		fmt.Fprintf(&b, ": the captured function failed: %v", e.Err)
	}
	if e.End != nil {
		fmt.Fprintf(&b, "; ending the capture: %v", e.End)
	}
	return b.String()
}

// Unwrap returns the captured function's error and the end's.
func (e *CaptureError) Unwrap() []error {
	var errs []error
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	if e.End != nil {
		errs = append(errs, e.End)
	}
	return errs
}

// Is reports whether target is ErrInvalidated and the capture was.
func (e *CaptureError) Is(target error) bool { return target == ErrInvalidated && e.Invalidated }

// isCaptureError reports whether err is one of the driver's capture errors.
func isCaptureError(err error) bool {
	var r libcuda.Result
	if !errors.As(err, &r) {
		return false
	}
	return r >= libcuda.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && r <= libcuda.CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD
}

func beginHint(err error) string {
	switch {
	case errors.Is(err, libcuda.CUDA_ERROR_ILLEGAL_STATE):
		return " (is the stream being captured already?)"
	case errors.Is(err, libcuda.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED):
		return " (the stream cannot be captured)"
	case errors.Is(err, libcuda.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT):
		return " (a blocking stream would depend on the legacy stream, which another capture is using)"
	}
	return ""
}

func streamName(s libcuda.Stream) string {
	switch s {
	case 0, libcuda.CU_STREAM_LEGACY:
		return "the legacy stream"
	case libcuda.CU_STREAM_PER_THREAD:
		return "the per-thread stream"
	}
	return fmt.Sprintf("stream %#x", uintptr(s))
}

func modeName(m libcuda.StreamCaptureMode) string {
	switch m {
	case libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL:
		return "global mode"
	case libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL:
		return "thread-local mode"
	case libcuda.CU_STREAM_CAPTURE_MODE_RELAXED:
		return "relaxed mode"
	}
	return m.String()
}
