//go:build !((linux && (amd64 || arm64)) || (windows && amd64))

package dl

import (
	"errors"
	"fmt"
	"runtime"
)

var errUnsupported = errors.New("NVIDIA ships no such library for this system")

// Places: the names alone, whose one attempt fails with the reason.
func (s *Search) Places(getenv func(string) string) []string { return s.Names }

// OpenLibrary fails: NVIDIA ships no CUDA libraries for this system.
func OpenLibrary(path string) (Library, error) {
	return nil, fmt.Errorf("%w (%s/%s)", errUnsupported, runtime.GOOS, runtime.GOARCH)
}
