//go:build windows && amd64

package nvml

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// libraryName is NVML's DLL name.
const libraryName = "nvml.dll"

// searchPlaces lists where Load looks, in order: the system folder
// (System32), where drivers since R418 install nvml.dll, then
// %ProgramW6432%\NVIDIA Corporation\NVSMI, where older ones did. Both are
// full paths: the DLL search path (the current folder, PATH) is never used.
func searchPlaces(getenv func(string) string) []string {
	var places []string
	if dir, err := windows.GetSystemDirectory(); err == nil {
		places = append(places, filepath.Join(dir, libraryName))
	} else {
		places = append(places, filepath.Join(getenv("SystemRoot"), "System32", libraryName))
	}
	if p := getenv("ProgramW6432"); p != "" {
		places = append(places, filepath.Join(p, "NVIDIA Corporation", "NVSMI", libraryName))
	}
	return places
}

type dllLibrary windows.Handle

func (h dllLibrary) sym(name string) (uintptr, bool) {
	a, err := windows.GetProcAddress(windows.Handle(h), name)
	return a, err == nil && a != 0
}

func (h dllLibrary) close() { _ = windows.FreeLibrary(windows.Handle(h)) }

// openLibrary loads a DLL by its full path, with its own folder searched
// for the DLLs it needs.
func openLibrary(path string) (library, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, os.ErrNotExist
	}
	h, err := windows.LoadLibraryEx(path, 0, windows.LOAD_WITH_ALTERED_SEARCH_PATH)
	if err != nil {
		return nil, err
	}
	return dllLibrary(h), nil
}
