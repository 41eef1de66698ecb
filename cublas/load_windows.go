//go:build windows

package cublas

// libraryNames are cuBLAS's DLL names: CUDA 13's.
var libraryNames = []string{"cublas64_13.dll"}
