package sync

import "time"

// Stats are counts of the package's helper threads and registry.
type Stats struct {
	// ActiveHelpers are helper threads blocking in the driver for a waiter
	// that waits for them: at most MaxHelpers.
	ActiveHelpers int
	// AbandonedHelpers are helper threads still blocking in the driver for
	// a waiter that left: at most MaxAbandoned.
	AbandonedHelpers int
	// BlockingHelpers are the helper threads inside a blocking driver
	// call, active or abandoned.
	BlockingHelpers int
	// HelperThreads are the helper threads alive, idle ones included.
	HelperThreads int
	// CallerBlocks counts, since the program started, the Auto waits that
	// nothing could cancel and that blocked in the driver on their own
	// thread instead of a helper's (each counted among ActiveHelpers and
	// BlockingHelpers while it blocked).
	CallerBlocks int64
	// PolledWaits are the waits on the shared poller: past their own
	// spinning, with no helper thread, or without spinning of their own
	// (every spin slot was taken, or the poller was spinning for other
	// waits).
	PolledWaits int
	// SpinningWaits are the waits spinning or yielding on their own
	// goroutine now, each in a spin slot: at most a quarter of
	// GOMAXPROCS (at least one, at most four).
	SpinningWaits int
	// PollerRounds, PollerQueries and PollerSleeps count, since the
	// program started, the shared poller's rounds, the queries they made
	// (one a target a round) and its sleeps between rounds; PollerSlept is
	// the time those sleeps took, and PollerKicks counts the sleeps that a
	// wait joining without spinning of its own cut short. (PollerSlept
	// over PollerSleeps is the mean sleep; PollerBusy over PollerRounds
	// is the mean round.)
	PollerRounds, PollerQueries, PollerSleeps, PollerKicks int64
	PollerSlept                                            time.Duration
	// PollerBusy is the time the poller's rounds took since the program
	// started: its queries and the hand-over of the waits whose target
	// finished, not its sleeps nor its yields between rounds.
	PollerBusy time.Duration
	// PolledWakeups counts the polled waits, since the program started,
	// that the poller ended with their target's answer (finished or
	// failed); PolledWakeupDelay is the time, summed over them, from the
	// poller's seeing that answer to the wait's return: what the hand-over
	// from the poller to the waiting goroutine costs.
	PolledWakeups     int64
	PolledWakeupDelay time.Duration
	// WakerWakeups counts the polled waits, since the program started,
	// that the poller's waker readied instead of the poller (those found
	// finished in rounds of 128 targets or more).
	WakerWakeups int64
	// SpunWaits counts the waits, since the program started, that spun
	// and yielded in a spin slot of their own; SpinQueries counts the
	// queries they made there and Spun is the time they spent there (wall
	// time, to the start of each one's last query: the CPU they took,
	// unless the machine had more runnable threads than cores).
	SpunWaits, SpinQueries int64
	Spun                   time.Duration
	// HandedOver counts the waits, since the program started, that left
	// their spin slot before their budgets were spent because the shared
	// poller had begun spinning for waits beyond the slots: they went on
	// waiting there.
	HandedOver int64
	// Captures are the registered captures in progress.
	Captures int
	// Postponed are the functions queued by Postpone that have not started.
	Postponed int
	// PostponedRunning is the postponed function running now, 0 or 1: it
	// counts as pending (captures wait to begin) until it returns, however
	// long it blocks.
	PostponedRunning int
	// CaptureWakeups counts the times, since the program started, that a
	// capture start waiting for driver calls in flight was woken: it
	// blocks between, so this grows with the calls that end (and once for
	// each context wait's entry bound), not with time.
	CaptureWakeups int64
	// ContextSyncs are the context waits' cuCtxSynchronize calls in
	// flight.
	ContextSyncs int
	// CapturesBesideContextSyncs counts the captures admitted, since the
	// program started, while a context wait's cuCtxSynchronize was in
	// flight (past its entry bound: see the package documentation).
	CapturesBesideContextSyncs int64
	// ContextSyncsRefused counts the context waits' cuCtxSynchronize calls
	// that the driver refused, since the program started, because a
	// capture was in progress when they reached it: each most likely
	// invalidated that capture (see Contexts in the package
	// documentation).
	ContextSyncsRefused int64
}

// ReadStats returns the current counts.
func ReadStats() Stats {
	var s Stats
	helpers.mu.Lock()
	s.ActiveHelpers, s.AbandonedHelpers, s.HelperThreads = helpers.active, helpers.abandoned, helpers.threads
	s.BlockingHelpers = helpers.blocking
	helpers.mu.Unlock()
	s.CallerBlocks = callerBlocks.Load()
	s.PolledWaits = int(polledWaits.Load())
	s.SpinningWaits = int(spinning.Load())
	s.PollerRounds, s.PollerQueries = pollerRounds.Load(), pollerQueries.Load()
	s.PollerSleeps, s.PollerKicks = pollerSleeps.Load(), pollerKicks.Load()
	s.PollerSlept = time.Duration(pollerSlept.Load())
	s.PollerBusy = time.Duration(pollerBusy.Load())
	s.PolledWakeups, s.PolledWakeupDelay = polledWakes.Load(), time.Duration(polledWakeNs.Load())
	s.WakerWakeups = wakerWakes.Load()
	s.SpunWaits, s.SpinQueries, s.Spun = spunWaits.Load(), spinQueries.Load(), time.Duration(spinTime.Load())
	s.HandedOver = handedOver.Load()
	s.Captures = CapturesInProgress()
	s.CaptureWakeups = captureWakeups.Load()
	s.CapturesBesideContextSyncs = capturesPastSyncs.Load()
	s.ContextSyncsRefused = syncsRefused.Load()
	reg.mu.Lock()
	s.Postponed = len(reg.queue)
	if reg.running {
		s.PostponedRunning = 1
	}
	s.ContextSyncs = len(reg.syncs)
	reg.mu.Unlock()
	return s
}
