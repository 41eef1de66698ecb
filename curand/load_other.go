//go:build !linux && !windows

package curand

// libraryNames: NVIDIA ships no cuRAND for this system.
var libraryNames = []string{"libcurand"}
