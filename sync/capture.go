package sync

import (
	"errors"
	"fmt"
	"runtime"
	gosync "sync"
	"sync/atomic"

	"github.com/purecuda/purecuda/libcuda"
)

// ErrCapturing is matched (errors.Is) by the error of a wait that would
// break, or cannot be made during, a stream capture in progress.
var ErrCapturing = errors.New("sync: stream capture in progress")

// The capture registry. captures counts the captures in progress that
// EnterCapture was told of; inflight counts this package's potentially
// unsafe driver calls in flight. EnterCapture raises captures and then
// waits for inflight to drain, and a call raises inflight and then checks
// captures, making the call in the caller's own mode only when it is zero:
// with sequentially consistent atomics one of the two always sees the
// other, so no query in global mode overlaps a capture that this package
// knows of.
var (
	captures atomic.Int64
	inflight atomic.Int32
	queries  atomic.Int32 // guardedQuery's limited queries in flight, in any mode
)

// EnterCapture records that a stream capture is about to begin and returns
// the function that records its end; call it once the capture has ended,
// whether it succeeded or not. It returns only when no driver call that
// this package made outside relaxed mode is still in flight, so begin the
// capture after it returns. Package graph calls it for every capture.
func EnterCapture() (leave func()) {
	captures.Add(1)
	for inflight.Load() != 0 {
		runtime.Gosched()
	}
	var once gosync.Once
	return func() {
		once.Do(func() { captures.Add(-1) })
	}
}

// CapturesInProgress returns the number of captures that EnterCapture was
// told of and that have not ended yet.
func CapturesInProgress() int { return int(captures.Load()) }

// fast reports whether a potentially unsafe call may be made in the
// caller's own capture mode; if so the caller must call done afterwards.
func fast() bool {
	inflight.Add(1)
	if captures.Load() == 0 {
		return true
	}
	inflight.Add(-1)
	return false
}

func done() { inflight.Add(-1) }

// IfNoCapture runs f, and reports that it did, only when no capture that
// EnterCapture was told of is in progress; while f runs, such captures
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
func Relaxed(f func() error) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	mode := libcuda.CU_STREAM_CAPTURE_MODE_RELAXED
	if err := libcuda.ThreadExchangeStreamCaptureMode(&mode); err != nil {
		return fmt.Errorf("sync: entering relaxed capture mode: %w", err)
	}
	defer func() {
		if rerr := libcuda.ThreadExchangeStreamCaptureMode(&mode); rerr != nil {
			err = errors.Join(err, fmt.Errorf("sync: restoring capture mode %v: %w", mode, rerr))
		}
	}()
	return f()
}

// RelaxedIn runs f as Relaxed does, with context cu current, and makes
// the thread's previous context current again after.
func RelaxedIn(cu libcuda.Context, f func() error) error {
	return Relaxed(func() error { return libcuda.WithContext(cu, f) })
}

// Capturing reports whether stream s is being captured. Its query,
// cuStreamIsCapturing, is allowed in every capture mode and on a stream
// being captured.
func Capturing(s libcuda.Stream) (bool, error) {
	var st libcuda.StreamCaptureStatus
	if err := libcuda.StreamIsCapturing(s, &st); err != nil {
		return false, err
	}
	return st != libcuda.CU_STREAM_CAPTURE_STATUS_NONE, nil
}

// guardedQuery runs t's query, a potentially unsafe call: in the caller's
// mode while no known capture is in progress, else in relaxed mode. With a
// limit (0 for none), it refuses (as "not ready") when that many limited
// queries are in flight already: each goroutine in a foreign call holds an
// OS thread, and the runtime adds threads when calls block (on a lock in
// the driver, say), so thousands of waiters querying at once would mean
// thousands of threads.
//
// Only a query made in the caller's own mode counts as in flight for
// EnterCapture: a relaxed one cannot harm a capture, and counting it would
// let a steady stream of waiters keep a capture from beginning.
func guardedQuery[T target](t T, limit int32) error {
	if limit > 0 {
		if queries.Add(1) > limit {
			queries.Add(-1)
			return libcuda.CUDA_ERROR_NOT_READY
		}
		defer queries.Add(-1)
	}
	if fast() {
		defer done()
		return t.query()
	}
	return Relaxed(t.query)
}

// queryLimit is the limit of a wait's queries: GOMAXPROCS, read once per
// wait because reading it takes the scheduler's lock.
func queryLimit() int32 { return int32(runtime.GOMAXPROCS(0)) }
