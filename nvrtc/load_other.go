//go:build !((linux && (amd64 || arm64)) || (windows && amd64))

package nvrtc

import (
	"fmt"
	"runtime"
)

// libraryNames: NVIDIA ships no NVRTC for this system.
var libraryNames = []string{"libnvrtc"}

// searchPlaces: the one attempt fails with the reason.
func searchPlaces(getenv func(string) string) []string { return libraryNames }

// openLibrary fails: NVIDIA ships no NVRTC for this system.
func openLibrary(path string) (library, error) {
	return nil, fmt.Errorf("NVRTC is not supported on %s/%s", runtime.GOOS, runtime.GOARCH)
}
