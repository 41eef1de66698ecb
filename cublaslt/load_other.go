//go:build !linux && !windows

package cublaslt

// libraryNames: NVIDIA ships no cuBLASLt for this system.
var libraryNames = []string{"libcublasLt"}
