//go:build linux

package nvjitlink

// libraryNames are nvJitLink's file names: CUDA 13's, and the development
// link a toolkit installs.
var libraryNames = []string{"libnvJitLink.so.13", "libnvJitLink.so"}
