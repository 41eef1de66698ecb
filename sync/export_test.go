package sync

// PollerCounts returns the shared poller's rounds and queries since the
// program started.
func PollerCounts() (rounds, queries int64) { return pollerRounds.Load(), pollerQueries.Load() }

// PollerRunning reports whether the shared poller's goroutine runs.
func PollerRunning() bool {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	return shared.running
}

// MaxCaptures is the most captures admitted at once: the largest count of
// their field in the registry's word.
const MaxCaptures = maxCaptures
