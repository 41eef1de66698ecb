//go:build !gpu

package nvml

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv/harness"
	"github.com/purecuda/purecuda/internal/testenv/nvmlsim"
)

// TestMain points the package at the NVML simulator before any test runs
// and, after them, fails the run if they left NVML initialized (the
// package's count or the simulator's) or an event set (a Watcher's
// goroutine) alive: nvmlsim.Main's leak check.
func TestMain(m *testing.M) {
	watchInit()
	nvmlsim.Main(m.Run)
}

// watchInit has the leak check count the package's Init calls not
// matched by Shutdown.
func watchInit() {
	harness.Watch("nvml.Init calls without Shutdown", func() (int64, error) { return int64(initialized()), nil })
}
