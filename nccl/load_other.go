//go:build !linux

package nccl

import (
	"fmt"
	"runtime"
)

// libraryNames: NVIDIA ships NCCL for Linux only.
var libraryNames []string

// open fails: NCCL is not available on this system, whatever the
// environment says.
func open(func(string) string) (*ncclLibrary, error) {
	return nil, fmt.Errorf("nccl: NCCL is not available on %s (NVIDIA ships it for Linux only): %w", runtime.GOOS, ErrNoLibrary)
}
