package cufft

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/purecuda/purecuda/internal/dl"
)

// EnvLibrary names the environment variable that points at the cuFFT
// library to load, e.g. PURECUDA_LIBCUFFT=/usr/local/cuda/lib64/libcufft.so.12. When
// it is set, that library is the only one tried.
const EnvLibrary = "PURECUDA_LIBCUFFT"

// ErrNoLibrary is matched (errors.Is) by the error of every call made when
// the cuFFT library cannot be loaded.
var ErrNoLibrary = errors.New("cufft: cuFFT library not loaded")

// ErrSymbol is matched (errors.Is) by every SymbolError.
var ErrSymbol = errors.New("cufft: cuFFT entry point unavailable")

// LoadError reports that no cuFFT library could be loaded; it names every
// place tried.
type LoadError = dl.LoadError

// Attempt is one place Load looked for the library.
type Attempt = dl.Attempt

// search is where Load looks (see Load).
var search = &dl.Search{
	Pkg:     "cufft",
	What:    "cuFFT",
	Env:     EnvLibrary,
	Names:   libraryNames,
	Pip:     []string{"cu13", "cufft"},
	Install: "a CUDA toolkit, or pip install nvidia-cufft",
}

// loadedLibrary is the open cuFFT library.
type loadedLibrary struct {
	lib     dl.Library
	path    string
	version int
}

var lazy = dl.NewLazy(func() (*loadedLibrary, error) { return open(os.Getenv) },
	func(l *loadedLibrary) dl.Library { return l.lib },
	func(l *loadedLibrary, symbol string) error {
		return &SymbolError{Symbol: symbol, Path: l.path, Version: l.version}
	})

// Load opens the cuFFT library, if it is not open yet. The first call does
// it too; Load is for programs that want the error early, or that set
// $PURECUDA_LIBCUFFT after a failed attempt: unlike the lazy load, which
// remembers its failure, Load tries again.
//
// With $PURECUDA_LIBCUFFT set, that library is loaded or the load fails.
// Otherwise, on Linux: libcufft.so.12 through the dynamic loader
// (LD_LIBRARY_PATH, the ld.so cache), then /usr/local/cuda/lib64,
// /usr/local/cuda/targets/*/lib, $CUDA_PATH/lib64 and targets/*/lib,
// $CONDA_PREFIX/lib, and the nvidia/cu13/lib and nvidia/cufft/lib folders
// of the Python site-packages of $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local,
// /usr/local and /usr. On Windows: cufft64_12.dll in %CUDA_PATH%\bin\x64 and
// %CUDA_PATH%\bin, then through the DLL search path. The file names follow
// cuFFT's own major version (12 in CUDA 13), not the toolkit's. A
// library that opens but lacks cufftMakePlanMany64 is not taken. A failure is a
// *LoadError that names every place tried.
func Load() error {
	_, err := lazy.Load()
	return err
}

// open finds and opens cuFFT as Load describes, reading the environment
// through getenv.
func open(getenv func(string) string) (*loadedLibrary, error) {
	return dl.Open(search, getenv, ErrNoLibrary, accept)
}

// accept checks that lib is cuFFT: it has cufftMakePlanMany64, and
// cufftGetVersion answers.
func accept(lib dl.Library, path string) (*loadedLibrary, error) {
	if _, err := dl.HasSymbol(lib, "cufftMakePlanMany64", "cuFFT"); err != nil {
		return nil, err
	}
	ver, err := dl.HasSymbol(lib, "cufftGetVersion", "cuFFT")
	if err != nil {
		return nil, err
	}
	var v int32
	var f struct {
		frame
		a0 unsafe.Pointer
		_  [7]uintptr
	}
	f.fn, f.n = ver, 1
	f.a0 = unsafe.Pointer(&v)
	call(&f.frame)
	if r := Result(int32(f.r)); r != 0 {
		return nil, fmt.Errorf("cufftGetVersion: %w", r)
	}
	return &loadedLibrary{lib: lib, path: path, version: int(v)}, nil
}

// Library describes the loaded cuFFT library.
type Library struct {
	Path    string // as it was opened
	Version int    // cufftGetVersion's answer, as 12*1000 + minor*100 + patch
}

// Loaded describes the loaded cuFFT library; ok is false when none is.
func Loaded() (lib Library, ok bool) {
	l := lazy.Loaded()
	if l == nil {
		return Library{}, false
	}
	return Library{Path: l.path, Version: l.version}, true
}

// SymbolError reports a cuFFT entry point that the loaded library lacks
// (one newer than the library). Only the function that needs it fails.
type SymbolError struct {
	Symbol  string // the C symbol
	Path    string // the library as it was opened
	Version int    // its version (cufftGetVersion)
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("cufft: %s is not provided by %s (cuFFT %d)", e.Symbol, e.Path, e.Version)
}

// Is reports whether target is ErrSymbol, so errors.Is(err, ErrSymbol)
// catches every SymbolError.
func (e *SymbolError) Is(target error) bool { return target == ErrSymbol }
