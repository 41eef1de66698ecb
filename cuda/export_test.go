package cuda

// ResetDroppedLogs forgets which kinds of dropped values were logged, so
// that a test can see the one warning of each kind again.
func ResetDroppedLogs() { droppedKinds.Clear() }

// ParamReadOnly is Func.paramReadOnly, for tests.
func ParamReadOnly(f *Func, i int) bool { return f.paramReadOnly(i) }

// HostWorkersIdle is the number of host workers waiting for a call.
func HostWorkersIdle() int {
	hostWorkers.mu.Lock()
	defer hostWorkers.mu.Unlock()
	return len(hostWorkers.idle)
}

// HostHandoffs counts host function hand-offs since the program began:
// all of them, those a spinning worker took without being woken, and
// those whose caller had the result without blocking.
func HostHandoffs() (calls, warm, unblocked uint64) {
	return hostStats.calls.Load(), hostStats.warm.Load(), hostStats.unblocked.Load()
}

// HostFuncsOnDriverThread counts the host functions run on the driver's
// thread (HostFuncOnDriverThread) since the program began.
func HostFuncsOnDriverThread() uint64 { return hostStats.direct.Load() }

// HostWakeHandoffs counts, since the program began, the hand-offs to a
// parked worker whose caller checked for the result instead of blocking at
// once, and of those the ones that had it without blocking.
func HostWakeHandoffs() (spun, unblocked uint64) {
	return hostStats.wakeSpins.Load(), hostStats.woken.Load()
}

// SetOrderMarkHook makes f run as each cross-stream order mark begins (a
// stream's work about to wait for another's), until restore is called.
func SetOrderMarkHook(f func()) (restore func()) {
	orderMarkHook.Store(&f)
	return func() { orderMarkHook.Store(nil) }
}

// StreamLockedForClose reports whether s's lock is held, or waited for, by
// a writer (a Close): new readers would wait.
func StreamLockedForClose(s *Stream) bool {
	if s.st.mu.TryRLock() {
		s.st.mu.RUnlock()
		return false
	}
	return true
}
