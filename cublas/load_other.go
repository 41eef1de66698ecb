//go:build !linux && !windows

package cublas

// libraryNames: NVIDIA ships no cuBLAS for this system.
var libraryNames = []string{"libcublas"}
