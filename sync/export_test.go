package sync

import gosync "sync"

// PollerCounts returns the shared poller's rounds and queries since the
// program started.
func PollerCounts() (rounds, queries int64) { return pollerRounds.Load(), pollerQueries.Load() }

// PollerRunning reports whether the shared poller's goroutine runs.
func PollerRunning() bool { return shared.running.Load() }

// MaxCaptures is the most captures admitted at once: the largest count of
// their field in the registry's word.
const MaxCaptures = maxCaptures

// PollerSleeps returns the shared poller's sleeps between rounds since
// the program started.
func PollerSleeps() int64 { return pollerSleeps.Load() }

// SpinSlots returns the number of spin slots for the GOMAXPROCS that the
// waits read last.
func SpinSlots() int { return int(spinSlots(procs.Load())) }

// SpinningPeak returns the most waits seen in spin slots at once since
// the last ResetSpinningPeak.
func SpinningPeak() int { return int(spinningPeak.Load()) }

// ResetSpinningPeak sets the peak to the waits in spin slots now.
func ResetSpinningPeak() { spinningPeak.Store(spinning.Load()) }

// HoldSpinSlots takes every spin slot for the GOMAXPROCS read last, as
// that many spinning waits would, and returns what gives them back (once,
// however often it is called: a test may release early and at cleanup).
func HoldSpinSlots() (release func()) { return HoldSomeSpinSlots(int(spinSlots(procs.Load()))) }

// HoldSomeSpinSlots takes n spin slots, as n spinning waits would, and
// returns what gives them back (once).
func HoldSomeSpinSlots(n int) (release func()) {
	spinning.Add(int32(n))
	return gosync.OnceFunc(func() { spinning.Add(int32(-n)) })
}
