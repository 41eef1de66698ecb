//go:build windows && amd64

package libcuda

import (
	"os"

	"golang.org/x/sys/windows"
)

const defaultLibraryName = "nvcuda.dll"

type dllLibrary windows.Handle

func (h dllLibrary) sym(name string) (uintptr, bool) {
	a, err := windows.GetProcAddress(windows.Handle(h), name)
	return a, err == nil && a != 0
}

func (h dllLibrary) close() { _ = windows.FreeLibrary(windows.Handle(h)) }

// openLibrary loads $PURECUDA_LIBCUDA if set (and only that: a failure is
// the error), else nvcuda.dll from the system directory (never from the
// current directory).
func openLibrary() (library, string, []Attempt) {
	if p := os.Getenv(EnvLibrary); p != "" {
		h, err := windows.LoadLibraryEx(p, 0, windows.LOAD_WITH_ALTERED_SEARCH_PATH)
		if err == nil {
			return dllLibrary(h), p, nil
		}
		return nil, "", []Attempt{{Path: p, Err: err}}
	}
	h, err := windows.LoadLibraryEx(defaultLibraryName, 0, windows.LOAD_LIBRARY_SEARCH_SYSTEM32)
	if err == nil {
		return dllLibrary(h), defaultLibraryName, nil
	}
	return nil, "", []Attempt{{Path: `%SystemRoot%\System32\` + defaultLibraryName, Err: err}}
}
