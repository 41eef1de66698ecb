//go:build gpu

package tests

import "github.com/purecuda/purecuda/libcuda"

// onGPU: the suite runs on the real driver and fails without one.
const onGPU = true

func setupDriver() error { return libcuda.Load() }
