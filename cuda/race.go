//go:build race

package cuda

// raceEnabled: the race detector is on; the launch history then orders
// its writes and reads with a lock, which the detector understands.
const raceEnabled = true
