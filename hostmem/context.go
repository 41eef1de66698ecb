package hostmem

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// withContext runs f on the calling goroutine, locked to its thread, with
// ctx current, and makes the thread's previous context current again
// after, as libcuda.WithContext does; an error of its own names the
// driver call.
func withContext(ctx libcuda.Context, f func() error) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var prev libcuda.Context
	if err := libcuda.CtxGetCurrent(&prev); err != nil {
		return fmt.Errorf("cuCtxGetCurrent: %w", err)
	}
	if prev != ctx {
		if err := libcuda.CtxSetCurrent(ctx); err != nil {
			return fmt.Errorf("cuCtxSetCurrent: %w", err)
		}
		defer func() {
			if rerr := libcuda.CtxSetCurrent(prev); rerr != nil {
				err = errors.Join(err, fmt.Errorf("making the thread's context current again: cuCtxSetCurrent: %w", rerr))
			}
		}()
	}
	return f()
}

// relaxedIn runs f as sync.Relaxed does (relaxed capture mode), with ctx
// current (withContext).
func relaxedIn(ctx libcuda.Context, f func() error) error {
	return sync.Relaxed(func() error { return withContext(ctx, f) })
}
