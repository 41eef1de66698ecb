package sync

// Stats are counts of the package's helper threads and registry.
type Stats struct {
	// ActiveHelpers are helper threads blocking in the driver for a waiter
	// that waits for them: at most MaxHelpers.
	ActiveHelpers int
	// AbandonedHelpers are helper threads still blocking in the driver for
	// a waiter that left: at most MaxAbandoned.
	AbandonedHelpers int
	// HelperThreads are the helper threads alive, idle ones included.
	HelperThreads int
	// Captures are the registered captures in progress.
	Captures int
	// Postponed are the functions queued by Postpone that have not started.
	Postponed int
}

// ReadStats returns the current counts.
func ReadStats() Stats {
	var s Stats
	helpers.mu.Lock()
	s.ActiveHelpers, s.AbandonedHelpers, s.HelperThreads = helpers.active, helpers.abandoned, helpers.threads
	helpers.mu.Unlock()
	s.Captures = CapturesInProgress()
	reg.mu.Lock()
	s.Postponed = len(reg.queue)
	reg.mu.Unlock()
	return s
}
