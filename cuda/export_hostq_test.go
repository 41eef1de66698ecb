//go:build linux && (amd64 || arm64)

package cuda

import "time"

// SetHostDispatcherSpin makes the dispatcher check for the next post for
// d before it sleeps, until restore is called.
func SetHostDispatcherSpin(d time.Duration) (restore func()) {
	was := hostQSpinFor.Swap(int64(d))
	return func() { hostQSpinFor.Store(was) }
}

// HostDispatcherSpinning reports whether the dispatcher is checking for
// the next post instead of sleeping.
func HostDispatcherSpinning() bool { return hostQSpinning.Load() }
