//go:build !gpu && !linux && !windows

package tests

// stressCycles is the number of wrap/use/free cycles of the hostmem stress
// test.
const stressCycles = 10_000
