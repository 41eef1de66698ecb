//go:build !((linux && (amd64 || arm64)) || (windows && amd64))

package dl

import (
	"fmt"
	"runtime"
)

// Places: the names alone, whose one attempt fails with the reason.
func (s *Search) Places(getenv func(string) string) []string { return s.Names }

// OpenLibrary fails: NVIDIA ships no CUDA libraries for this system.
func OpenLibrary(path string) (Library, error) {
	return nil, fmt.Errorf("%w (%s/%s)", errUnsupported, runtime.GOOS, runtime.GOARCH)
}
