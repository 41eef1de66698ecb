//go:build windows

package nvjitlink

// libraryNames are nvJitLink's DLL names: CUDA 13's.
var libraryNames = []string{"nvJitLink_130_0.dll"}
