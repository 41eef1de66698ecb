//go:build !linux || !(amd64 || arm64)

package cuda

// Here HostFunc's functions go through the callback that enters Go
// (newHostCallback), and are handed to a host worker there.
const hostQueueing = false

func hostQueueCallback() uintptr { return 0 }

func startHostDispatcher() {}

func hostQCounts() (posted, wakes, slept, wakeSlept uint64) { return 0, 0, 0, 0 }
