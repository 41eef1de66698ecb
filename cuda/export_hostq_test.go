//go:build linux && (amd64 || arm64)

package cuda

import (
	"sync/atomic"
	"time"
)

// SetHostDispatcherSpin makes the dispatcher check for the next post for
// d before it sleeps, until restore is called.
func SetHostDispatcherSpin(d time.Duration) (restore func()) {
	was := hostQSpinFor.Swap(int64(d))
	return func() { hostQSpinFor.Store(was) }
}

// HostDispatcherSpinning reports whether the dispatcher is checking for
// the next post instead of sleeping.
func HostDispatcherSpinning() bool { return hostQSpinning.Load() }

// HostDispatcherSleeping reports whether the dispatcher sleeps (or is
// about to) until a post wakes it.
func HostDispatcherSleeping() bool { return atomic.LoadUint32(&hostQSleeping) == 1 }
