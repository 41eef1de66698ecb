//go:build windows && amd64

package nvrtc

import (
	"path/filepath"

	"golang.org/x/sys/windows"
)

// libraryNames are NVRTC's DLL names, newest first: CUDA 13, CUDA 12.
var libraryNames = []string{"nvrtc64_130_0.dll", "nvrtc64_120_0.dll"}

// searchPlaces lists where Load looks, in order: the toolkit's folders
// (CUDA 13 moved its DLLs to bin\x64), then the names through the DLL
// search path.
func searchPlaces(getenv func(string) string) []string {
	var places []string
	if p := getenv("CUDA_PATH"); p != "" {
		places = append(places, filepath.Join(p, "bin", "x64"), filepath.Join(p, "bin"))
	}
	return append(places, libraryNames...)
}

type dllLibrary windows.Handle

func (h dllLibrary) sym(name string) (uintptr, bool) {
	a, err := windows.GetProcAddress(windows.Handle(h), name)
	return a, err == nil && a != 0
}

func (h dllLibrary) close() { _ = windows.FreeLibrary(windows.Handle(h)) }

// openLibrary loads a DLL by path, with its own folder searched for the
// DLLs it needs (nvrtc-builtins), or by name through the DLL search path.
func openLibrary(path string) (library, error) {
	var flags uintptr
	if filepath.IsAbs(path) {
		flags = windows.LOAD_WITH_ALTERED_SEARCH_PATH
	}
	h, err := windows.LoadLibraryEx(path, 0, flags)
	if err != nil {
		return nil, err
	}
	return dllLibrary(h), nil
}
