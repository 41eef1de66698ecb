//go:build !((linux && (amd64 || arm64)) || (windows && amd64))

package dl

import (
	"errors"
	"fmt"
	"runtime"
)

// errUnsupported is the reason OpenLibrary fails where NVIDIA ships no
// CUDA libraries.
var errUnsupported = errors.New("NVIDIA ships no such library for this system")

// OpenLibrary fails: NVIDIA ships no CUDA libraries for this system.
func OpenLibrary(path string) (Library, error) {
	return nil, fmt.Errorf("%w (%s/%s)", errUnsupported, runtime.GOOS, runtime.GOARCH)
}

// systemDir is Windows' system folder; none here.
func systemDir(getenv func(string) string) string { return "" }
