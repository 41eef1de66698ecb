//go:build gpu

package nvml

import (
	"os"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv/harness"
)

// TestMain runs the tests on the real NVML (Init fails them where there
// is none) under the watchdog, and fails the run if they left the
// package's Init count above 0.
func TestMain(m *testing.M) {
	harness.Watch("nvml.Init calls without Shutdown", func() (int64, error) { return int64(initialized()), nil })
	os.Exit(harness.Run(m, nil))
}
