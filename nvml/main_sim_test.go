//go:build !gpu

package nvml

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv/nvmlsim"
)

// TestMain points the package at the NVML simulator before any test runs.
func TestMain(m *testing.M) { nvmlsim.Main(m.Run) }
