//go:build linux

package cufft

// libraryNames are cuFFT's file names: CUDA 13's (cuFFT 12), and the
// development link a toolkit installs.
var libraryNames = []string{"libcufft.so.12", "libcufft.so"}
