//go:build linux && (amd64 || arm64)

package cuda

// DriverThreadsBound reports whether the runtime keeps an M bound to the
// driver's callback thread (bindDriverThreads made the pthread key).
func DriverThreadsBound() bool { return driverThreadsBound.Load() }
