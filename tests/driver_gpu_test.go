//go:build gpu

package tests

// stressCycles is the number of wrap/use/free cycles of the hostmem stress
// test on the GPU.
const stressCycles = 10_000
