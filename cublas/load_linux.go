//go:build linux

package cublas

// libraryNames are cuBLAS's file names: CUDA 13's, and the development
// link a toolkit installs.
var libraryNames = []string{"libcublas.so.13", "libcublas.so"}
