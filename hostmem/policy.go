package hostmem

import (
	"time"

	"github.com/purecuda/purecuda/sync"
)

// releasePolicy is how a release waits for a buffer's uses. Its latency
// matters little, and each query is a driver call beside the program's own
// launches: after a first query it sleeps between queries, from 10µs up
// to 1ms, and blocks no thread.
var releasePolicy = sync.Policy{Mode: sync.Polling, Spin: time.Nanosecond, Yield: time.Nanosecond, MaxSleep: time.Millisecond}
