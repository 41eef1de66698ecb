//go:build !gpu && !linux

package tests

import "errors"

// onGPU: the suite would run on the simulator, which is built on Linux only.
const onGPU = false

// stressCycles is the number of wrap/use/free cycles of the hostmem stress
// test.
const stressCycles = 10_000

func setupDriver() error { return errors.New("the driver simulator is built on Linux only") }
