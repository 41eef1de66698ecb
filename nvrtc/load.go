package nvrtc

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/purecuda/purecuda/internal/dl"
)

// EnvLibrary names the environment variable that points at the NVRTC
// library to load, e.g. PURECUDA_LIBNVRTC=/usr/local/cuda/lib64/libnvrtc.so.13.
// When it is set, that library is the only one tried.
const EnvLibrary = "PURECUDA_LIBNVRTC"

// ErrNoLibrary is matched (errors.Is) by the error of every call made when
// the NVRTC library cannot be loaded.
var ErrNoLibrary = errors.New("nvrtc: NVRTC library not loaded")

// ErrSymbol is matched (errors.Is) by every SymbolError.
var ErrSymbol = errors.New("nvrtc: NVRTC entry point unavailable")

// nvrtcLibrary is the loaded NVRTC library.
type nvrtcLibrary struct {
	lib          dl.Library
	path         string
	major, minor int // nvrtcVersion
}

// search is where Load looks (see Load).
var search = &dl.Search{
	Pkg:     "nvrtc",
	What:    "NVRTC",
	Env:     EnvLibrary,
	Names:   libraryNames,
	Pip:     []string{"cu13", "cuda_nvrtc"},
	Install: "a CUDA toolkit, or pip install nvidia-cuda-nvrtc",
}

var lazy = dl.NewLazy(func() (*nvrtcLibrary, error) { return open(os.Getenv) },
	func(l *nvrtcLibrary) dl.Library { return l.lib },
	func(l *nvrtcLibrary, symbol string) error {
		return &SymbolError{Symbol: symbol, Path: l.path, Major: l.major, Minor: l.minor}
	})

// Load opens the NVRTC library, if it is not open yet. The first NVRTC
// call does it too; Load is for programs that want the error early, or that
// set PURECUDA_LIBNVRTC after a failed attempt: unlike the lazy load, which
// remembers its failure, Load tries again.
//
// With $PURECUDA_LIBNVRTC set, that library is loaded or the load fails.
// Otherwise the library is looked for where a CUDA toolkit and NVIDIA's
// pip and conda packages put it. On Linux: libnvrtc.so.13, libnvrtc.so.12
// and libnvrtc.so through the dynamic loader (LD_LIBRARY_PATH, the ld.so
// cache), then in /usr/local/cuda/lib64, /usr/local/cuda/targets/*/lib,
// $CUDA_PATH/lib64, $CONDA_PREFIX/lib, and the nvidia/cu13/lib and
// nvidia/cuda_nvrtc/lib folders of the Python site-packages of
// $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local, /usr/local and /usr. On Windows:
// nvrtc64_130_0.dll or nvrtc64_120_0.dll in %CUDA_PATH%\bin\x64 and
// %CUDA_PATH%\bin, then through the DLL search path (which includes PATH).
// A library that opens but lacks nvrtcVersion is not taken. A failure is a
// *LoadError that names every place tried.
func Load() error {
	_, err := lazy.Load()
	return err
}

// libraryOrLoad returns the loaded library, loading it on first use. A
// failed lazy load is remembered, so calls without a library stay cheap.
func libraryOrLoad() (*nvrtcLibrary, error) { return lazy.Get() }

// open finds and opens the NVRTC library as Load describes, reading the
// environment through getenv.
func open(getenv func(string) string) (*nvrtcLibrary, error) {
	return dl.Open(search, getenv, ErrNoLibrary, openNVRTC)
}

// openNVRTC checks that lib is NVRTC: it has nvrtcVersion, and that
// answers.
func openNVRTC(lib dl.Library, path string) (*nvrtcLibrary, error) {
	version, err := dl.HasSymbol(lib, "nvrtcVersion", "NVRTC")
	if err != nil {
		return nil, err
	}
	var major, minor int32
	var f struct {
		frame
		a0, a1 unsafe.Pointer
		_      [6]uintptr
	}
	f.fn, f.n = version, 2
	f.a0, f.a1 = unsafe.Pointer(&major), unsafe.Pointer(&minor)
	call(&f.frame)
	if r := Result(int32(f.r)); r != NVRTC_SUCCESS {
		return nil, fmt.Errorf("nvrtcVersion: %w", r)
	}
	return &nvrtcLibrary{lib: lib, path: path, major: int(major), minor: int(minor)}, nil
}

// Attempt is one place Load looked for the library.
type Attempt = dl.Attempt

// LoadError reports that no NVRTC library could be loaded: it names every
// place tried (Tried) and whether that was $PURECUDA_LIBNVRTC alone
// (FromEnv), and matches ErrNoLibrary.
type LoadError = dl.LoadError

// Library describes the loaded NVRTC library.
type Library struct {
	Path         string // as it was opened
	Major, Minor int    // nvrtcVersion, e.g. 13 and 0
}

// Loaded describes the loaded NVRTC library; ok is false when none is.
func Loaded() (lib Library, ok bool) {
	l := lazy.Loaded()
	if l == nil {
		return Library{}, false
	}
	return Library{Path: l.path, Major: l.major, Minor: l.minor}, true
}

// SymbolError reports an NVRTC entry point that the loaded library lacks
// (an older NVRTC). Only the function that needs it fails.
type SymbolError struct {
	Symbol       string // the C symbol, e.g. "nvrtcGetCUBIN"
	Path         string // the library as it was opened
	Major, Minor int    // its nvrtcVersion
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("nvrtc: %s is not provided by %s (NVRTC %d.%d)", e.Symbol, e.Path, e.Major, e.Minor)
}

// Is reports whether target is ErrSymbol, so errors.Is(err, ErrSymbol)
// catches every SymbolError.
func (e *SymbolError) Is(target error) bool { return target == ErrSymbol }
