package sync

import (
	"errors"
	"runtime"
	gosync "sync"
	"sync/atomic"

	"github.com/purecuda/purecuda/libcuda"
)

// ErrCapturing is matched (errors.Is) by the error of a wait that would
// break, or cannot be made during, a stream capture in progress.
var ErrCapturing = errors.New("sync: stream capture in progress")

// The capture registry. captures counts the captures in progress that
// EnterCapture was told of; unsafe counts the driver calls in flight that
// are made in the caller's own capture mode because captures was zero when
// they started. EnterCapture raises captures and then waits for unsafe to
// drain, and a fast call raises unsafe and then checks captures: with
// sequentially consistent atomics one of the two always sees the other, so
// no query in global mode overlaps a capture that this package knows of.
var (
	captures atomic.Int64
	unsafe   atomic.Int64
)

// EnterCapture records that a stream capture is about to begin and returns
// the function that records its end; call it once the capture has ended,
// whether it succeeded or not. It returns only when no driver call that
// this package made outside relaxed mode is still in flight, so begin the
// capture after it returns. Package graph calls it for every capture.
func EnterCapture() (leave func()) {
	captures.Add(1)
	for unsafe.Load() != 0 {
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
	unsafe.Add(1)
	if captures.Load() == 0 {
		return true
	}
	unsafe.Add(-1)
	return false
}

func done() { unsafe.Add(-1) }

// relaxed runs f on a locked OS thread in relaxed capture mode and
// restores the thread's previous mode after, also when f panics.
func relaxed(f func() error) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	mode := libcuda.CU_STREAM_CAPTURE_MODE_RELAXED
	if err := libcuda.ThreadExchangeStreamCaptureMode(&mode); err != nil {
		return err
	}
	defer func() {
		if rerr := libcuda.ThreadExchangeStreamCaptureMode(&mode); rerr != nil && err == nil {
			err = rerr
		}
	}()
	return f()
}

// query runs a potentially unsafe query: directly while no known capture is
// in progress, else in relaxed mode.
func query(f func() error) error {
	if fast() {
		defer done()
		return f()
	}
	return relaxed(f)
}
