//go:build linux && (amd64 || arm64)

package libcuda

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/ebitengine/purego"
)

const defaultLibraryName = "libcuda.so.1"

// searchDirs are the places libcuda.so.1 is found in when the dynamic
// loader does not know it: WSL, NVIDIA's container toolkit, and the usual
// library directories of 64-bit distributions.
var searchDirs = []string{
	"/usr/lib/wsl/lib",
	"/usr/local/nvidia/lib64",
	"/usr/lib64",
	"/usr/lib/x86_64-linux-gnu",
	"/usr/lib/aarch64-linux-gnu",
}

type dlLibrary uintptr

func (h dlLibrary) sym(name string) (uintptr, bool) {
	a, err := purego.Dlsym(uintptr(h), name)
	return a, err == nil && a != 0
}

func (h dlLibrary) close() { _ = purego.Dlclose(uintptr(h)) }

// openLibrary tries each candidate in order and returns the first that
// opens, with the attempts that failed before it. A library named by
// $PURECUDA_LIBCUDA is the only candidate: when it cannot be opened, that is
// the error, with no fall back to the system's driver.
func openLibrary() (library, string, []Attempt) {
	if p := os.Getenv(EnvLibrary); p != "" {
		lib, _, failed := openLibraryAt(p)
		if lib != nil {
			return lib, p, nil
		}
		return nil, "", failed
	}
	candidates := []string{defaultLibraryName}
	for _, dir := range searchDirs {
		candidates = append(candidates, filepath.Join(dir, defaultLibraryName))
	}
	var tried []Attempt
	for _, path := range candidates {
		lib, _, failed := openLibraryAt(path)
		if lib != nil {
			return lib, path, tried
		}
		tried = append(tried, failed...)
	}
	return nil, "", tried
}

// openLibraryAt opens one library by path.
func openLibraryAt(path string) (library, string, []Attempt) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		if filepath.IsAbs(path) {
			if _, serr := os.Stat(path); errors.Is(serr, os.ErrNotExist) {
				err = os.ErrNotExist // dlerror's text says the same at more length
			}
		}
		return nil, "", []Attempt{{Path: path, Err: err}}
	}
	return dlLibrary(h), path, nil
}
