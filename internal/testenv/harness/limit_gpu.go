//go:build gpu

package harness

import "time"

// DefaultWatchdog is the watchdog's limit when EnvWatchdog is not set:
// under -tags gpu the suites run longer (soaks, real kernels) but still
// end well before go test's default of 10 minutes, which this stays under
// so that a hang fails with every goroutine's stack and a known limit.
const DefaultWatchdog = 8 * time.Minute
