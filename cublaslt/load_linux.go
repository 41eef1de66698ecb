//go:build linux

package cublaslt

// libraryNames are cuBLASLt's file names: CUDA 13's, and the development
// link a toolkit installs.
var libraryNames = []string{"libcublasLt.so.13", "libcublasLt.so"}
