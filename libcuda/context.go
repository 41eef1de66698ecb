package libcuda

import (
	"errors"
	"runtime"
)

// WithContext runs f on a locked OS thread with ctx current and afterwards
// makes current again whatever context the thread had before, also when f
// panics. The CUDA driver keeps the current context per OS thread while Go
// moves goroutines between threads: any sequence of calls that relies on
// the current context belongs inside WithContext (or under the caller's own
// runtime.LockOSThread).
//
// A failure to restore the previous context is joined to f's error.
func WithContext(ctx Context, f func() error) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var prev Context
	if err := CtxGetCurrent(&prev); err != nil {
		return err
	}
	if prev != ctx {
		if err := CtxSetCurrent(ctx); err != nil {
			return err
		}
		defer func() {
			if rerr := CtxSetCurrent(prev); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}()
	}
	return f()
}
