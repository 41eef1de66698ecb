package sync

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
)

// ErrCapturing is matched (errors.Is) by the error of a wait that would
// break, or cannot be made during, a stream capture in progress.
var ErrCapturing = errors.New("sync: stream capture in progress")

// IfNoCapture runs f, and reports that it did, only when no capture that
// is registered (StartCapture) is in progress; while f runs, such captures
// wait to begin. It is for calls that must not be made during a capture
// but are not worth relaxed mode: recording an event on the legacy
// stream, say, which a capture beginning at the same moment could take
// in. f must not wait for a capture to begin, nor begin one.
func IfNoCapture(f func() error) (ran bool, err error) {
	if !fast() {
		return false, nil
	}
	defer done()
	return true, f()
}

// CaptureSafe runs f, a call that a capture in progress would refuse (a
// "potentially unsafe" one: a query, an allocation, a registration), so
// that it breaks no capture registered here: in the calling thread's own
// capture mode while none is in progress (IfNoCapture: captures wait to
// begin meanwhile), else in relaxed mode (Relaxed). The common case, no
// capture in progress, costs no switch of capture mode.
//
// cuCtxSynchronize is refused during a capture in every mode: Postpone it.
func CaptureSafe(f func() error) error {
	if ran, err := IfNoCapture(f); ran {
		return err
	}
	return Relaxed(f)
}

// CaptureSafeIn runs f as CaptureSafe does, with context cu current
// (libcuda.WithContext).
func CaptureSafeIn(cu libcuda.Context, f func() error) error {
	return CaptureSafe(func() error { return libcuda.WithContext(cu, f) })
}

// Relaxed runs f on a locked OS thread in relaxed capture mode and
// restores the thread's previous mode after, also when f panics (the panic
// goes on). In relaxed mode the calls that global and thread-local
// captures refuse (synchronizing, querying, allocating, freeing,
// registering) neither fail nor invalidate other threads' captures; only
// cuCtxSynchronize still does, in every mode.
//
// f runs on the calling goroutine; work it hands to other goroutines runs
// in their threads' modes. A failure to restore the mode is joined to f's
// error.
//
// When the previous mode cannot be restored, the goroutine stays locked
// to its thread (the thread ends with it), so that no other goroutine
// inherits a thread in an unexpected mode; the failure is logged.
func Relaxed(f func() error) (err error) {
	runtime.LockOSThread()
	mode := libcuda.CU_STREAM_CAPTURE_MODE_RELAXED
	if err := libcuda.ThreadExchangeStreamCaptureMode(&mode); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("sync: entering relaxed capture mode: %w", dl.Failed("", "cuThreadExchangeStreamCaptureMode", err))
	}
	defer func() {
		if rerr := libcuda.ThreadExchangeStreamCaptureMode(&mode); rerr != nil {
			rerr = fmt.Errorf("sync: restoring capture mode %v: %w", mode, dl.Failed("", "cuThreadExchangeStreamCaptureMode", rerr))
			slog.Error("sync: a thread stays in relaxed capture mode; its goroutine keeps it locked", "err", rerr)
			err = errors.Join(err, rerr)
			return
		}
		runtime.UnlockOSThread()
	}()
	return f()
}

// RelaxedIn runs f as Relaxed does, with context cu current, and makes
// the thread's previous context current again after
// (libcuda.WithContext).
func RelaxedIn(cu libcuda.Context, f func() error) error {
	return Relaxed(func() error { return libcuda.WithContext(cu, f) })
}

// Capturing reports whether stream s is being captured. Its query,
// cuStreamIsCapturing, is allowed in every capture mode and on a stream
// being captured.
func Capturing(s libcuda.Stream) (bool, error) {
	var st libcuda.StreamCaptureStatus
	if err := libcuda.StreamIsCapturing(s, &st); err != nil {
		return false, dl.Failed("", "cuStreamIsCapturing", err)
	}
	return st != libcuda.CU_STREAM_CAPTURE_STATUS_NONE, nil
}

// errBusy is guardedQuery's refusal: as many queries as its limit are in
// flight already. The target may or may not be finished.
var errBusy = errors.New("sync: queries in flight at their limit")

// guardedQuery runs t's query, a potentially unsafe call: in the caller's
// mode while no known capture is in progress, else in relaxed mode. With a
// limit (0 for none), it refuses (errBusy) when that many limited queries
// are in flight already: each goroutine in a foreign call holds an
// OS thread, and the runtime adds threads when calls block (on a lock in
// the driver, say), so thousands of waiters querying at once would mean
// thousands of threads.
//
// While no capture is in progress it costs one atomic addition before the
// query and one after: the same count serves StartCapture and the limit.
// Only a query made in the caller's own mode counts as in flight for
// StartCapture: a relaxed one cannot harm a capture, and counting it would
// let a steady stream of waiters keep a capture from beginning.
func guardedQuery[T target](t T, limit int32) error {
	n := enter(queryUnit)
	if n < captureUnit {
		defer leave(queryUnit)
		if limit > 0 && n&queryMask > uint64(limit) {
			return errBusy
		}
		// No capture that StartCapture admitted is in progress, and none
		// is until this query leaves: nothing to check before it.
		return t.query(false)
	}
	leave(queryUnit)
	if limit > 0 {
		if relaxedQueries.Add(1) > limit {
			relaxedQueries.Add(-1)
			return errBusy
		}
		defer relaxedQueries.Add(-1)
	}
	return Relaxed(func() error { return t.query(true) })
}

// lastOut wakes the captures waiting to start when n, the registry's word
// after a call left, counts no call in flight: leave for the quick queries
// (Stream, quickEventQuery), which subtract their unit themselves when a
// capture is admitted.
func lastOut(n uint64) {
	if n&inflightMask == 0 {
		wakeCaptures()
	}
}

// procs is GOMAXPROCS as a wait last read it. Reading GOMAXPROCS takes the
// scheduler's lock, so the first query of a wait (for work that has
// finished, the only one) is limited by the value that an earlier wait
// read, and a wait that goes on past it to spin reads it anew.
var procs struct {
	_ [64]byte // alone in its cache line(s), as state is: read by every wait
	atomic.Int32
	_ [60]byte
}

func init() { procs.Store(int32(runtime.GOMAXPROCS(0))) }

// queryLimit is the limit of a wait's first query: the GOMAXPROCS read
// last.
func queryLimit() int32 { return procs.Load() }

// readQueryLimit reads GOMAXPROCS again, for a wait that is about to spin
// (a wait that joins the spinning poller at once does not: reading it
// takes the scheduler's lock, which a thousand waits starting together
// would take in turn).
func readQueryLimit() int32 {
	n := int32(runtime.GOMAXPROCS(0))
	if procs.Load() != n { // a store would take the line from every core that reads it
		procs.Store(n)
	}
	return n
}
