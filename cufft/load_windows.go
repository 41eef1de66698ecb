//go:build windows

package cufft

// libraryNames are cuFFT's DLL names: CUDA 13's (cuFFT 12).
var libraryNames = []string{"cufft64_12.dll"}
