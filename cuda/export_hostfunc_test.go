package cuda

// HostFuncsOnDriverThread counts the host functions run on the driver's
// thread (HostFuncOnDriverThread) since the program began.
func HostFuncsOnDriverThread() uint64 { return hostStats.direct.Load() }

// HostWokenUnblocked counts the hand-offs to a parked worker whose caller
// had the result without blocking, since the program began.
func HostWokenUnblocked() uint64 { return hostStats.woken.Load() }
