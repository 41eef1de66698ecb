//go:build !((linux && (amd64 || arm64)) || (windows && amd64))

package dl

import (
	"fmt"
	"runtime"
)

// OpenLibrary fails: NVIDIA ships no CUDA libraries for this system.
func OpenLibrary(path string) (Library, error) {
	return nil, fmt.Errorf("%w (%s/%s)", errUnsupported, runtime.GOOS, runtime.GOARCH)
}

// systemDir is Windows' system folder; none here.
func systemDir(getenv func(string) string) string { return "" }
