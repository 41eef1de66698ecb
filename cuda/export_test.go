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
//
// Where HostFunc goes through the queue (HostQueueing), they count the
// records the dispatcher took, those it took without having slept, and
// those whose driver thread had the result without sleeping.
func HostHandoffs() (calls, warm, unblocked uint64) {
	if hostQueueing {
		calls = hostStats.calls.Load()
		_, _, slept, _ := hostQCounts()
		return calls, hostStats.warm.Load(), calls - slept
	}
	return hostStats.calls.Load(), hostStats.warm.Load(), hostStats.unblocked.Load()
}

// HostEntries counts the driver's calls of a host function that entered
// Go, and the queued records run on a goroutine other than the
// dispatcher's because they were taken together with another.
func HostEntries() (entered, batched uint64) {
	return hostStats.entered.Load(), hostStats.batched.Load()
}

// HostQueuePosts counts the records HostFunc's callback posted to the
// queue since the program began.
func HostQueuePosts() uint64 {
	posted, _, _, _ := hostQCounts()
	return posted
}

// HostQueueing reports whether HostFunc's driver thread hands the call to
// a dispatcher without entering Go (hostq.go), on this platform.
const HostQueueing = hostQueueing

// HostDispatching reports whether the queue's dispatcher runs.
func HostDispatching() bool {
	hostFuncs.mu.Lock()
	defer hostFuncs.mu.Unlock()
	return hostFuncs.dispatching
}

// HostFuncsOnDriverThread counts the host functions run on the driver's
// thread (HostFuncOnDriverThread) since the program began.
func HostFuncsOnDriverThread() uint64 { return hostStats.direct.Load() }

// HostWakeHandoffs counts, since the program began, the hand-offs to a
// parked worker whose caller checked for the result instead of blocking at
// once, and of those the ones that had it without blocking.
//
// Where HostFunc goes through the queue, they count the posts that woke
// the sleeping dispatcher, and of those the ones whose driver thread had
// the result without sleeping.
func HostWakeHandoffs() (spun, unblocked uint64) {
	if hostQueueing {
		_, w, _, ws := hostQCounts()
		return w, w - ws
	}
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

// HostWorkerIdle is how long the dispatcher and the host workers wait for
// a call before they end.
const HostWorkerIdle = hostWorkerIdle

// HostWorkerSpin is how long the dispatcher and the host workers check
// for the next call before they sleep.
const HostWorkerSpin = hostWorkerSpin

// LockHostTable holds the host function table's lock, which submissions
// take, until unlock is called.
func LockHostTable() (unlock func()) {
	hostFuncs.mu.Lock()
	return hostFuncs.mu.Unlock
}
