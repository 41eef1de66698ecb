//go:build !((linux && (amd64 || arm64)) || (windows && amd64))

package nvml

import (
	"fmt"
	"runtime"
)

// libraryName: NVIDIA ships no NVML for this system.
const libraryName = "libnvidia-ml"

// searchPlaces: the one attempt fails with the reason.
func searchPlaces(getenv func(string) string) []string { return []string{libraryName} }

// openLibrary fails: NVIDIA ships no NVML for this system.
func openLibrary(path string) (library, error) {
	return nil, fmt.Errorf("NVML is not supported on %s/%s", runtime.GOOS, runtime.GOARCH)
}
