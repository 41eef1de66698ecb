//go:build !gpu

package tests

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv/nvmlsim"
)

// nvmlSetup points package nvml at the NVML simulator, whose devices have
// the UUIDs and bus ids of the driver simulator's.
func nvmlSetup(t *testing.T) {
	t.Helper()
	if _, err := nvmlsim.Setup(); err != nil {
		t.Fatalf("the NVML simulator: %v", err)
	}
}
