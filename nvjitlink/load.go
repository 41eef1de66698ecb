package nvjitlink

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/purecuda/purecuda/internal/dl"
)

// EnvLibrary names the environment variable that points at the nvJitLink
// library to load, e.g.
// PURECUDA_LIBNVJITLINK=/usr/local/cuda/lib64/libnvJitLink.so.13. When it
// is set, that library is the only one tried.
const EnvLibrary = "PURECUDA_LIBNVJITLINK"

// ErrNoLibrary is matched (errors.Is) by the error of every call made when
// the nvJitLink library cannot be loaded.
var ErrNoLibrary = errors.New("nvjitlink: nvJitLink library not loaded")

// ErrSymbol is matched (errors.Is) by every SymbolError.
var ErrSymbol = errors.New("nvjitlink: nvJitLink entry point unavailable")

// LoadError reports that no nvJitLink library could be loaded; it names
// every place tried.
type LoadError = dl.LoadError

// Attempt is one place Load looked for the library.
type Attempt = dl.Attempt

// search is where Load looks (see Load).
var search = &dl.Search{
	Pkg:     "nvjitlink",
	What:    "nvJitLink",
	Env:     EnvLibrary,
	Names:   libraryNames,
	Pip:     []string{"cu13", "nvjitlink"},
	Install: "a CUDA toolkit, or pip install nvidia-nvjitlink",
}

// jitLinkLibrary is the loaded nvJitLink library.
type jitLinkLibrary struct {
	lib          dl.Library
	path         string
	major, minor int
}

var lazy = dl.NewLazy(func() (*jitLinkLibrary, error) { return open(os.Getenv) },
	func(l *jitLinkLibrary) dl.Library { return l.lib },
	func(l *jitLinkLibrary, symbol string) error {
		return &SymbolError{Symbol: symbol, Path: l.path, Major: l.major, Minor: l.minor}
	})

// Load opens the nvJitLink library, if it is not open yet. The first call
// does it too; Load is for programs that want the error early, or that set
// PURECUDA_LIBNVJITLINK after a failed attempt: unlike the lazy load,
// which remembers its failure, Load tries again.
//
// With $PURECUDA_LIBNVJITLINK set, that library is loaded or the load
// fails. Otherwise, on Linux: libnvJitLink.so.13 through the dynamic
// loader (LD_LIBRARY_PATH, the ld.so cache), then /usr/local/cuda/lib64,
// /usr/local/cuda/targets/*/lib, $CUDA_PATH/lib64 and targets/*/lib,
// $CONDA_PREFIX/lib, and the nvidia/cu13/lib and nvidia/nvjitlink/lib
// folders of the Python site-packages of $VIRTUAL_ENV, $CONDA_PREFIX,
// ~/.local, /usr/local and /usr (CUDA 13's pip wheels put it in
// nvidia/cu13/lib, beside NVRTC). On Windows: nvJitLink_130_0.dll in
// %CUDA_PATH%\bin\x64 and %CUDA_PATH%\bin, then through the DLL search
// path. A library that opens but lacks __nvJitLinkCreate_13_0 is not
// taken. A failure is a *LoadError that names every place tried.
func Load() error {
	_, err := lazy.Load()
	return err
}

// open finds and opens nvJitLink as Load describes, reading the
// environment through getenv.
func open(getenv func(string) string) (*jitLinkLibrary, error) {
	return dl.Open(search, getenv, ErrNoLibrary, openJitLink)
}

// openJitLink checks that lib is nvJitLink 13: it has
// __nvJitLinkCreate_13_0, and nvJitLinkVersion answers.
func openJitLink(lib dl.Library, path string) (*jitLinkLibrary, error) {
	if _, err := dl.HasSymbol(lib, "__nvJitLinkCreate_13_0", "nvJitLink 13"); err != nil {
		return nil, err
	}
	ver, err := dl.HasSymbol(lib, "nvJitLinkVersion", "nvJitLink")
	if err != nil {
		return nil, err
	}
	var major, minor uint32
	var f struct {
		frame
		a0, a1 unsafe.Pointer
		_      [6]uintptr
	}
	f.fn, f.n = ver, 2
	f.a0, f.a1 = unsafe.Pointer(&major), unsafe.Pointer(&minor)
	call(&f.frame)
	if r := Result(int32(f.r)); r != NVJITLINK_SUCCESS {
		return nil, fmt.Errorf("nvJitLinkVersion: %w", r)
	}
	return &jitLinkLibrary{lib: lib, path: path, major: int(major), minor: int(minor)}, nil
}

// Library describes the loaded nvJitLink library.
type Library struct {
	Path         string // as it was opened
	Major, Minor int    // nvJitLinkVersion: 13 and 0 for CUDA 13.0
}

// Loaded describes the loaded nvJitLink library; ok is false when none is.
func Loaded() (lib Library, ok bool) {
	l := lazy.Loaded()
	if l == nil {
		return Library{}, false
	}
	return Library{Path: l.path, Major: l.major, Minor: l.minor}, true
}

// SymbolError reports an nvJitLink entry point that the loaded library
// lacks (the versioned symbols of another CUDA release). Only the function
// that needs it fails.
type SymbolError struct {
	Symbol       string // the C symbol, e.g. "__nvJitLinkCreate_13_0"
	Path         string // the library as it was opened
	Major, Minor int    // its version (nvJitLinkVersion)
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("nvjitlink: %s is not provided by %s (nvJitLink %d.%d)", e.Symbol, e.Path, e.Major, e.Minor)
}

// Is reports whether target is ErrSymbol, so errors.Is(err, ErrSymbol)
// catches every SymbolError.
func (e *SymbolError) Is(target error) bool { return target == ErrSymbol }
