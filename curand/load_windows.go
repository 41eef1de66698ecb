//go:build windows

package curand

// libraryNames are cuRAND's DLL names: CUDA 13's (cuRAND 10).
var libraryNames = []string{"curand64_10.dll"}
