//go:build linux && (amd64 || arm64)

package dl

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/ebitengine/purego"
)

// Places lists where Open looks, in order: the names through the dynamic
// loader (LD_LIBRARY_PATH, the ld.so cache), then /usr/local/cuda/lib64,
// /usr/local/cuda/targets/*/lib, $CUDA_PATH's lib64 and targets/*/lib,
// $CONDA_PREFIX/lib, and the nvidia/<s.Pip>/lib folders of the Python
// site-packages of $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local, /usr/local and
// /usr (pip puts CUDA 13's libraries in nvidia/cu13/lib).
func (s *Search) Places(getenv func(string) string) []string {
	places := append([]string(nil), s.Names...)
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
		for _, dir := range s.Pip {
			add(filepath.Join(site, "nvidia", dir, "lib"))
		}
	}
	return places
}

type dlLibrary uintptr

func (h dlLibrary) Sym(name string) (uintptr, bool) {
	a, err := purego.Dlsym(uintptr(h), name)
	return a, err == nil && a != 0
}

func (h dlLibrary) Close() { _ = purego.Dlclose(uintptr(h)) }

// OpenLibrary opens one library by path or by name for the dynamic loader.
func OpenLibrary(path string) (Library, error) {
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
