//go:build windows && amd64

package dl

import (
	"path/filepath"

	"golang.org/x/sys/windows"
)

type dllLibrary windows.Handle

func (h dllLibrary) Sym(name string) (uintptr, bool) {
	a, err := windows.GetProcAddress(windows.Handle(h), name)
	return a, err == nil && a != 0
}

func (h dllLibrary) Close() { _ = windows.FreeLibrary(windows.Handle(h)) }

// Handle is the module handle of a library OpenLibrary opened (for tests
// that ask Windows which file it is).
func Handle(l Library) (windows.Handle, bool) {
	h, ok := l.(dllLibrary)
	return windows.Handle(h), ok
}

// OpenLibrary loads a DLL by path, with its own folder searched for the
// DLLs it needs (cublas64_13.dll needs cublasLt64_13.dll beside it), or
// by name through the DLL search path.
func OpenLibrary(path string) (Library, error) {
	var flags uintptr
	if filepath.IsAbs(path) {
		flags = windows.LOAD_WITH_ALTERED_SEARCH_PATH
	}
	h, err := windows.LoadLibraryEx(path, 0, flags)
	if err != nil {
		return nil, err
	}
	return dllLibrary(h), nil
}

// systemDir is Windows' system folder (System32), where the driver's
// DLLs are.
func systemDir(getenv func(string) string) string {
	if dir, err := windows.GetSystemDirectory(); err == nil {
		return dir
	}
	return windowsJoin(getenv("SystemRoot"), "System32")
}
