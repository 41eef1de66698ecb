package cuda

// HostFuncsOnDriverThread counts the host functions run on the driver's
// thread (HostFuncOnDriverThread) since the program began.
func HostFuncsOnDriverThread() uint64 { return hostStats.direct.Load() }

// HostWakeHandoffs counts, since the program began, the hand-offs to a
// parked worker whose caller checked for the result instead of blocking at
// once, and of those the ones that had it without blocking.
func HostWakeHandoffs() (spun, unblocked uint64) {
	return hostStats.wakeSpins.Load(), hostStats.woken.Load()
}
