//go:build linux

package curand

// libraryNames are cuRAND's file names: CUDA 13's (cuRAND 10), and the
// development link a toolkit installs.
var libraryNames = []string{"libcurand.so.10", "libcurand.so"}
