//go:build windows && amd64

package dl

import (
	"path/filepath"

	"golang.org/x/sys/windows"
)

// Places lists where Open looks, in order: the toolkit's folders (CUDA 13
// moved its DLLs to bin\x64), then the names through the DLL search path
// (which includes PATH).
func (s *Search) Places(getenv func(string) string) []string {
	var places []string
	if p := getenv("CUDA_PATH"); p != "" {
		places = append(places, filepath.Join(p, "bin", "x64"), filepath.Join(p, "bin"))
	}
	return append(places, s.Names...)
}

type dllLibrary windows.Handle

func (h dllLibrary) Sym(name string) (uintptr, bool) {
	a, err := windows.GetProcAddress(windows.Handle(h), name)
	return a, err == nil && a != 0
}

func (h dllLibrary) Close() { _ = windows.FreeLibrary(windows.Handle(h)) }

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
