package cublaslt

import (
	"errors"
	"fmt"
	"os"

	"github.com/purecuda/purecuda/internal/dl"
)

// EnvLibrary names the environment variable that points at the cuBLASLt
// library to load, e.g.
// PURECUDA_LIBCUBLASLT=/usr/local/cuda/lib64/libcublasLt.so.13. When it is
// set, that library is the only one tried.
const EnvLibrary = "PURECUDA_LIBCUBLASLT"

// ErrNoLibrary is matched (errors.Is) by the error of every call made when
// the cuBLASLt library cannot be loaded.
var ErrNoLibrary = errors.New("cublaslt: cuBLASLt library not loaded")

// ErrSymbol is matched (errors.Is) by every SymbolError.
var ErrSymbol = errors.New("cublaslt: cuBLASLt entry point unavailable")

// LoadError reports that no cuBLASLt library could be loaded; it names
// every place tried.
type LoadError = dl.LoadError

// search is where Load looks (see Load).
var search = &dl.Search{
	Pkg:     "cublaslt",
	What:    "cuBLASLt",
	Env:     EnvLibrary,
	Names:   libraryNames,
	Pip:     []string{"cu13", "cublas"},
	Install: "a CUDA toolkit, or pip install nvidia-cublas",
}

// ltLibrary is the loaded cuBLASLt library.
type ltLibrary struct {
	lib     dl.Library
	path    string
	version uint64 // cublasLtGetVersion
}

var lazy = dl.NewLazy(func() (*ltLibrary, error) { return open(os.Getenv) },
	func(l *ltLibrary) dl.Library { return l.lib },
	func(l *ltLibrary, symbol string) error {
		return &SymbolError{Symbol: symbol, Path: l.path, Version: int(l.version)}
	})

// Load opens the cuBLASLt library, if it is not open yet; the first call
// does it too. It looks where package cublas's Load looks, for
// libcublasLt.so.13 (cublasLt64_13.dll on Windows), with
// $PURECUDA_LIBCUBLASLT overriding. A library that opens but lacks
// cublasLtCreate is not taken. A failure is a *LoadError that names every
// place tried.
func Load() error {
	_, err := lazy.Load()
	return err
}

func open(getenv func(string) string) (*ltLibrary, error) {
	return dl.Open(search, getenv, ErrNoLibrary, openLt)
}

// openLt checks that lib is cuBLASLt: it has cublasLtCreate, and
// cublasLtGetVersion answers.
func openLt(lib dl.Library, path string) (*ltLibrary, error) {
	if _, err := dl.HasSymbol(lib, "cublasLtCreate", "cuBLASLt"); err != nil {
		return nil, err
	}
	version, err := dl.HasSymbol(lib, "cublasLtGetVersion", "cuBLASLt")
	if err != nil {
		return nil, err
	}
	var f struct {
		frame
		_ [8]uintptr
	}
	f.fn = version
	call(&f.frame)
	return &ltLibrary{lib: lib, path: path, version: uint64(f.r)}, nil
}

// Library describes the loaded cuBLASLt library.
type Library struct {
	Path    string // as it was opened
	Version int    // cublasLtGetVersion: major*10000 + minor*100 + patch
}

// Loaded describes the loaded cuBLASLt library; ok is false when none is.
func Loaded() (lib Library, ok bool) {
	l := lazy.Loaded()
	if l == nil {
		return Library{}, false
	}
	return Library{Path: l.path, Version: int(l.version)}, true
}

// SymbolError reports a cuBLASLt entry point that the loaded library
// lacks (an older cuBLASLt). Only the function that needs it fails.
type SymbolError struct {
	Symbol  string // the C symbol
	Path    string // the library as it was opened
	Version int    // cublasLtGetVersion
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("cublaslt: %s is not provided by %s (cuBLASLt %d)", e.Symbol, e.Path, e.Version)
}

// Is reports whether target is ErrSymbol.
func (e *SymbolError) Is(target error) bool { return target == ErrSymbol }
