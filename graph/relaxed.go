package graph

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/purecuda/purecuda/libcuda"
)

// Relaxed runs f on a locked OS thread in relaxed capture mode and
// restores the thread's previous mode after, also when f panics (the panic
// is re-raised). In relaxed mode the calls that global and thread-local
// captures refuse (synchronizing, querying, allocating, freeing,
// registering) neither fail nor invalidate other threads' captures; only
// cuCtxSynchronize still does, in every mode (use Postpone for it).
//
// f runs on the calling goroutine; work it hands to other goroutines runs
// in their threads' modes. A failure to restore the mode is joined to f's
// error.
func Relaxed(f func() error) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	mode := libcuda.CU_STREAM_CAPTURE_MODE_RELAXED
	if err := libcuda.ThreadExchangeStreamCaptureMode(&mode); err != nil {
		return fmt.Errorf("graph: entering relaxed capture mode: %w", err)
	}
	defer func() {
		if rerr := libcuda.ThreadExchangeStreamCaptureMode(&mode); rerr != nil {
			err = errors.Join(err, fmt.Errorf("graph: restoring %s: %w", modeName(mode), rerr))
		}
	}()
	return f()
}

// inContext runs f in relaxed mode with cu current, on a locked thread.
func inContext(cu libcuda.Context, f func() error) error {
	return libcuda.WithContext(cu, func() error { return Relaxed(f) })
}
