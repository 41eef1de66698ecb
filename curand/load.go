package curand

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/purecuda/purecuda/internal/dl"
)

// EnvLibrary names the environment variable that points at the cuRAND
// library to load, e.g. PURECUDA_LIBCURAND=/usr/local/cuda/lib64/libcurand.so.10. When
// it is set, that library is the only one tried.
const EnvLibrary = "PURECUDA_LIBCURAND"

// ErrNoLibrary is matched (errors.Is) by the error of every call made when
// the cuRAND library cannot be loaded.
var ErrNoLibrary = errors.New("curand: cuRAND library not loaded")

// ErrSymbol is matched (errors.Is) by every SymbolError.
var ErrSymbol = errors.New("curand: cuRAND entry point unavailable")

// LoadError reports that no cuRAND library could be loaded; it names every
// place tried.
type LoadError = dl.LoadError

// Attempt is one place Load looked for the library.
type Attempt = dl.Attempt

// search is where Load looks (see Load).
var search = &dl.Search{
	Pkg:     "curand",
	What:    "cuRAND",
	Env:     EnvLibrary,
	Names:   libraryNames,
	Pip:     []string{"cu13", "curand"},
	Install: "a CUDA toolkit, or pip install nvidia-curand",
}

// loadedLibrary is the open cuRAND library.
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

// Load opens the cuRAND library, if it is not open yet. The first call does
// it too; Load is for programs that want the error early, or that set
// $PURECUDA_LIBCURAND after a failed attempt: unlike the lazy load, which
// remembers its failure, Load tries again.
//
// With $PURECUDA_LIBCURAND set, that library is loaded or the load fails.
// Otherwise, on Linux: libcurand.so.10 through the dynamic loader
// (LD_LIBRARY_PATH, the ld.so cache), then /usr/local/cuda/lib64,
// /usr/local/cuda/targets/*/lib, $CUDA_PATH/lib64 and targets/*/lib,
// $CONDA_PREFIX/lib, and the nvidia/cu13/lib and nvidia/curand/lib folders
// of the Python site-packages of $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local,
// /usr/local and /usr. On Windows: curand64_10.dll in %CUDA_PATH%\bin\x64 and
// %CUDA_PATH%\bin, then through the DLL search path. The file names follow
// cuRAND's own major version (10 in CUDA 13), not the toolkit's. A
// library that opens but lacks curandCreateGenerator is not taken. A failure is a
// *LoadError that names every place tried.
func Load() error {
	_, err := lazy.Load()
	return err
}

// open finds and opens cuRAND as Load describes, reading the environment
// through getenv.
func open(getenv func(string) string) (*loadedLibrary, error) {
	return dl.Open(search, getenv, ErrNoLibrary, accept)
}

// accept checks that lib is cuRAND: it has curandCreateGenerator, and
// curandGetVersion answers.
func accept(lib dl.Library, path string) (*loadedLibrary, error) {
	if _, err := dl.HasSymbol(lib, "curandCreateGenerator", "cuRAND"); err != nil {
		return nil, err
	}
	ver, err := dl.HasSymbol(lib, "curandGetVersion", "cuRAND")
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
	if r := Status(int32(f.r)); r != 0 {
		return nil, fmt.Errorf("curandGetVersion: %w", r)
	}
	return &loadedLibrary{lib: lib, path: path, version: int(v)}, nil
}

// Library describes the loaded cuRAND library.
type Library struct {
	Path    string // as it was opened
	Version int    // curandGetVersion's answer, as 10*1000 + minor*100 + patch
}

// Loaded describes the loaded cuRAND library; ok is false when none is.
func Loaded() (lib Library, ok bool) {
	l := lazy.Loaded()
	if l == nil {
		return Library{}, false
	}
	return Library{Path: l.path, Version: l.version}, true
}

// SymbolError reports a cuRAND entry point that the loaded library lacks
// (one newer than the library). Only the function that needs it fails.
type SymbolError struct {
	Symbol  string // the C symbol
	Path    string // the library as it was opened
	Version int    // its version (curandGetVersion)
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("curand: %s is not provided by %s (cuRAND %d)", e.Symbol, e.Path, e.Version)
}

// Is reports whether target is ErrSymbol, so errors.Is(err, ErrSymbol)
// catches every SymbolError.
func (e *SymbolError) Is(target error) bool { return target == ErrSymbol }
