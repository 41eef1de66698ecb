//go:build linux && (amd64 || arm64)

package nvrtc

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/ebitengine/purego"
)

// libraryNames are NVRTC's file names, newest first: CUDA 13, CUDA 12, and
// the development link a toolkit installs.
var libraryNames = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}

// searchPlaces lists where Load looks, in order: the names through the
// dynamic loader, then the folders of a toolkit install and of NVIDIA's
// Python packages (pip puts CUDA 13's libraries in nvidia/cu13/lib and
// CUDA 12's in nvidia/cuda_nvrtc/lib; conda puts them in $CONDA_PREFIX/lib).
func searchPlaces(getenv func(string) string) []string {
	places := append([]string(nil), libraryNames...)
	add := func(patterns ...string) {
		for _, p := range patterns {
			matches, _ := filepath.Glob(p)
			places = append(places, matches...)
		}
	}
	add("/usr/local/cuda/lib64", "/usr/local/cuda/targets/*/lib")
	if p := getenv("CUDA_PATH"); p != "" {
		add(filepath.Join(p, "lib64"), filepath.Join(p, "targets", "*", "lib"))
	}
	if p := getenv("CONDA_PREFIX"); p != "" {
		add(filepath.Join(p, "lib"))
	}
	var sites []string
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := getenv(env); p != "" {
			sites = append(sites, filepath.Join(p, "lib", "python3*", "site-packages"))
		}
	}
	if p := getenv("HOME"); p != "" {
		sites = append(sites, filepath.Join(p, ".local", "lib", "python3*", "site-packages"))
	}
	sites = append(sites,
		"/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
		"/usr/lib/python3*/dist-packages", "/usr/lib/python3*/site-packages",
		"/usr/lib64/python3*/site-packages")
	for _, site := range sites {
		add(filepath.Join(site, "nvidia", "cu13", "lib"), filepath.Join(site, "nvidia", "cuda_nvrtc", "lib"))
	}
	return places
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
