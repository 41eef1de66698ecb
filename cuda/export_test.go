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
