//go:build !race

package cuda

// raceEnabled: the race detector is off; the launch history is written
// without a lock (see launchSlot).
const raceEnabled = false
