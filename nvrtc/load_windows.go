//go:build windows

package nvrtc

// libraryNames are NVRTC's DLL names, newest first: CUDA 13, CUDA 12.
var libraryNames = []string{"nvrtc64_130_0.dll", "nvrtc64_120_0.dll"}
