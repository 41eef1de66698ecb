package libcuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/purecuda/purecuda/internal/dl"
)

// WithContext runs f on a locked OS thread with ctx current and afterwards
// makes current again whatever context the thread had before, also when f
// panics. The CUDA driver keeps the current context per OS thread while Go
// moves goroutines between threads: any sequence of calls that relies on
// the current context belongs inside WithContext (or under the caller's own
// runtime.LockOSThread).
//
// It is the one such helper of this module: packages sync, graph and
// hostmem run their calls in a context through it.
//
// f's error comes back as f returned it. A failure of WithContext's own
// calls names the call (and matches the Result with errors.Is); a failure
// to restore the previous context is joined to f's error.
func WithContext(ctx Context, f func() error) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var prev Context
	if err := CtxGetCurrent(&prev); err != nil {
		return dl.Failed("", "cuCtxGetCurrent", err)
	}
	if prev != ctx {
		switches.Add(1)
		if err := CtxSetCurrent(ctx); err != nil {
			return dl.Failed("", "cuCtxSetCurrent", err)
		}
		defer func() {
			if rerr := CtxSetCurrent(prev); rerr != nil {
				err = errors.Join(err, fmt.Errorf("restoring the thread's context: %w", dl.Failed("", "cuCtxSetCurrent", rerr)))
			}
		}()
	}
	return f()
}

// switches counts WithContext's changes of a thread's context.
var switches atomic.Uint64

// ContextSwitches is the number of times WithContext has made a context
// current on a thread that had another one (or none) since the program
// started; the restores that end those calls are not counted. A layer
// that knows what a thread has current without asking the driver
// (package cuda inside a RunCached) reads it before and after code it
// does not control: when it has changed, what it knew may no longer hold.
// Calls of CtxSetCurrent, CtxPushCurrent and CtxPopCurrent made directly
// are not counted.
func ContextSwitches() uint64 { return switches.Load() }
