//go:build gpu

package nvml

import (
	"os"
	"testing"
)

// TestMain runs the tests on the real NVML; Init fails them where there
// is none.
func TestMain(m *testing.M) { os.Exit(m.Run()) }
