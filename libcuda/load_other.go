//go:build !((linux && (amd64 || arm64)) || (windows && amd64))

package libcuda

import (
	"fmt"
	"runtime"
)

const defaultLibraryName = "libcuda"

// openLibrary fails: NVIDIA ships no CUDA driver for this system.
func openLibrary() (library, string, []Attempt) {
	return nil, "", []Attempt{{Path: runtime.GOOS + "/" + runtime.GOARCH,
		Err: fmt.Errorf("CUDA is not supported on %s/%s", runtime.GOOS, runtime.GOARCH)}}
}
