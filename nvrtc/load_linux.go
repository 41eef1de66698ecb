//go:build linux

package nvrtc

// libraryNames are NVRTC's file names, newest first: CUDA 13, CUDA 12, and
// the development link a toolkit installs.
var libraryNames = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}
