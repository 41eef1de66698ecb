package cublas

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libtypes"
)

// EnvLibrary names the environment variable that points at the cuBLAS
// library to load, e.g. PURECUDA_LIBCUBLAS=/usr/local/cuda/lib64/libcublas.so.13.
// When it is set, that library is the only one tried.
const EnvLibrary = "PURECUDA_LIBCUBLAS"

// ErrNoLibrary is matched (errors.Is) by the error of every call made when
// the cuBLAS library cannot be loaded.
var ErrNoLibrary = errors.New("cublas: cuBLAS library not loaded")

// ErrSymbol is matched (errors.Is) by every SymbolError.
var ErrSymbol = errors.New("cublas: cuBLAS entry point unavailable")

// LoadError reports that no cuBLAS library could be loaded; it names every
// place tried.
type LoadError = dl.LoadError

// Attempt is one place Load looked for the library.
type Attempt = dl.Attempt

// search is where Load looks (see Load).
var search = &dl.Search{
	Pkg:     "cublas",
	What:    "cuBLAS",
	Env:     EnvLibrary,
	Names:   libraryNames,
	Pip:     []string{"cu13", "cublas"},
	Install: "a CUDA toolkit, or pip install nvidia-cublas",
}

// cublasLibrary is the loaded cuBLAS library.
type cublasLibrary struct {
	lib     dl.Library
	path    string
	version int // cublasGetProperty: major*10000 + minor*100 + patch
}

var lazy = dl.NewLazy(func() (*cublasLibrary, error) { return open(os.Getenv) },
	func(l *cublasLibrary) dl.Library { return l.lib },
	func(l *cublasLibrary, symbol string) error {
		return &SymbolError{Symbol: symbol, Path: l.path, Version: l.version}
	})

// Load opens the cuBLAS library, if it is not open yet. The first cuBLAS
// call does it too; Load is for programs that want the error early, or that
// set PURECUDA_LIBCUBLAS after a failed attempt: unlike the lazy load,
// which remembers its failure, Load tries again.
//
// With $PURECUDA_LIBCUBLAS set, that library is loaded or the load fails.
// Otherwise, on Linux: libcublas.so.13 through the dynamic loader
// (LD_LIBRARY_PATH, the ld.so cache), then /usr/local/cuda/lib64,
// /usr/local/cuda/targets/*/lib, $CUDA_PATH/lib64 and targets/*/lib,
// $CONDA_PREFIX/lib, and the nvidia/cu13/lib and nvidia/cublas/lib
// folders of the Python site-packages of $VIRTUAL_ENV, $CONDA_PREFIX,
// ~/.local, /usr/local and /usr (CUDA 13's pip wheels put it in
// nvidia/cu13/lib). On Windows: cublas64_13.dll in %CUDA_PATH%\bin\x64
// and %CUDA_PATH%\bin, then through the DLL search path. A library that
// opens but lacks cublasCreate_v2 is not taken. A failure is a *LoadError
// that names every place tried.
func Load() error {
	_, err := lazy.Load()
	return err
}

// open finds and opens cuBLAS as Load describes, reading the environment
// through getenv.
func open(getenv func(string) string) (*cublasLibrary, error) {
	return dl.Open(search, getenv, ErrNoLibrary, openCUBLAS)
}

// openCUBLAS checks that lib is cuBLAS: it has cublasCreate_v2, and
// cublasGetProperty answers.
func openCUBLAS(lib dl.Library, path string) (*cublasLibrary, error) {
	if _, err := dl.HasSymbol(lib, "cublasCreate_v2", "cuBLAS"); err != nil {
		return nil, err
	}
	prop, err := dl.HasSymbol(lib, "cublasGetProperty", "cuBLAS")
	if err != nil {
		return nil, err
	}
	v := 0
	for _, p := range []libtypes.LibraryPropertyType{libtypes.MAJOR_VERSION, libtypes.MINOR_VERSION, libtypes.PATCH_LEVEL} {
		var n int32
		var f struct {
			frame
			a0 uintptr
			a1 unsafe.Pointer
			_  [6]uintptr
		}
		f.fn, f.n = prop, 2
		f.a0, f.a1 = uintptr(p), unsafe.Pointer(&n)
		call(&f.frame)
		if s := Status(int32(f.r)); s != CUBLAS_STATUS_SUCCESS {
			return nil, fmt.Errorf("cublasGetProperty: %w", s)
		}
		v = v*100 + int(n)
	}
	return &cublasLibrary{lib: lib, path: path, version: v}, nil
}

// Library describes the loaded cuBLAS library.
type Library struct {
	Path    string // as it was opened
	Version int    // major*10000 + minor*100 + patch, as CUBLAS_VERSION: 130100 for 13.1.0
}

// Loaded describes the loaded cuBLAS library; ok is false when none is.
func Loaded() (lib Library, ok bool) {
	l := lazy.Loaded()
	if l == nil {
		return Library{}, false
	}
	return Library{Path: l.path, Version: l.version}, true
}

// SymbolError reports a cuBLAS entry point that the loaded library lacks
// (an older cuBLAS). Only the function that needs it fails.
type SymbolError struct {
	Symbol  string // the C symbol, e.g. "cublasGemmGroupedBatchedEx_64"
	Path    string // the library as it was opened
	Version int    // its version, as Library.Version
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("cublas: %s is not provided by %s (cuBLAS %d.%d.%d)", e.Symbol, e.Path, e.Version/10000, e.Version/100%100, e.Version%100)
}

// Is reports whether target is ErrSymbol, so errors.Is(err, ErrSymbol)
// catches every SymbolError.
func (e *SymbolError) Is(target error) bool { return target == ErrSymbol }
