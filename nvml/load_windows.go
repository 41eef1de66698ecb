//go:build windows && amd64

package nvml

import (
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
