//go:build !linux && !windows

package nvjitlink

// libraryNames: NVIDIA ships no nvJitLink for this system.
var libraryNames = []string{"libnvJitLink"}
