//go:build linux && (amd64 || arm64)

package dl

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"

	"github.com/ebitengine/purego"
)

type dlLibrary uintptr

func (h dlLibrary) Sym(name string) (uintptr, bool) {
	a, err := purego.Dlsym(uintptr(h), name)
	return a, err == nil && a != 0
}

func (h dlLibrary) Close() { _ = purego.Dlclose(uintptr(h)) }

// errNoReason stands for a dlopen failure that dlerror did not explain.
var errNoReason = errors.New("dlopen failed and dlerror gave no reason")

// OpenLibrary opens one library by path or by name for the dynamic loader.
//
// dlerror's message is kept per thread: purego's Dlopen reads it with a
// second C call after the failed dlopen, and a goroutine may move to
// another OS thread between the two, which then reads another thread's
// (empty) message. The goroutine stays on its thread for both.
func OpenLibrary(path string) (Library, error) {
	runtime.LockOSThread()
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	runtime.UnlockOSThread()
	if err != nil {
		if filepath.IsAbs(path) {
			if _, serr := os.Stat(path); errors.Is(serr, os.ErrNotExist) {
				return nil, os.ErrNotExist // dlerror's text says the same at more length
			}
		}
		if err.Error() == "" {
			err = errNoReason
		}
		return nil, err
	}
	return dlLibrary(h), nil
}

// systemDir is Windows' system folder; none here.
func systemDir(getenv func(string) string) string { return "" }
