//go:build gpu

package tests

import "testing"

// nvmlSetup: on the GPU, package nvml loads the driver's NVML.
func nvmlSetup(t *testing.T) { t.Helper() }
