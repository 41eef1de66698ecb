//go:build !gpu && (linux || windows)

package tests

// stressCycles is the number of wrap/use/free cycles of the hostmem stress
// test on the simulator.
const stressCycles = 100_000
