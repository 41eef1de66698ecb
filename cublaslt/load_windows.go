//go:build windows

package cublaslt

// libraryNames are cuBLASLt's DLL names: CUDA 13's.
var libraryNames = []string{"cublasLt64_13.dll"}
