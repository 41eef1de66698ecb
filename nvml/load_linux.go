//go:build linux && (amd64 || arm64)

package nvml

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/ebitengine/purego"
)

// libraryName is NVML's file name on Linux.
const libraryName = "libnvidia-ml.so.1"

// searchPlaces lists where Load looks, in order: the name through the
// dynamic loader, then the folders where the NVIDIA container runtime and
// WSL put the driver's libraries.
func searchPlaces(getenv func(string) string) []string {
	return []string{
		libraryName,
		filepath.Join("/usr/local/nvidia/lib64", libraryName),
		filepath.Join("/usr/lib/wsl/lib", libraryName),
	}
}

type dlLibrary uintptr

func (h dlLibrary) sym(name string) (uintptr, bool) {
	a, err := purego.Dlsym(uintptr(h), name)
	return a, err == nil && a != 0
}

func (h dlLibrary) close() { _ = purego.Dlclose(uintptr(h)) }

// openLibrary opens one library by path or by name.
func openLibrary(path string) (library, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		if filepath.IsAbs(path) {
			if _, serr := os.Stat(path); errors.Is(serr, os.ErrNotExist) {
				err = os.ErrNotExist // dlerror's text says the same at more length
			}
		}
		return nil, err
	}
	return dlLibrary(h), nil
}
