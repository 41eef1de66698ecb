//go:build !gpu

package harness

import "time"

// DefaultWatchdog is the watchdog's limit when EnvWatchdog is not set: on
// the simulator a package's tests take seconds, under -race at most about
// half a minute (measured on two cores), so a binary still running after
// this long is hung.
const DefaultWatchdog = 5 * time.Minute
