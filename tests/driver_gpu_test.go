//go:build gpu

package tests

import "github.com/purecuda/purecuda/libcuda"

// onGPU: the suite runs on the real driver and fails without one.
const onGPU = true

func setupDriver() error { return libcuda.Load() }

// stressCycles is the number of wrap/use/free cycles of the hostmem stress
// test on the GPU.
const stressCycles = 10_000
