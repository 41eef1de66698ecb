//go:build !linux && !windows

package nvrtc

// libraryNames: NVIDIA ships no NVRTC for this system.
var libraryNames = []string{"libnvrtc"}
