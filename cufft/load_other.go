//go:build !linux && !windows

package cufft

// libraryNames: NVIDIA ships no cuFFT for this system.
var libraryNames = []string{"libcufft"}
