package nccl

import (
	"errors"
	"fmt"
	"os"

	"github.com/purecuda/purecuda/internal/dl"
)

// EnvLibrary names the environment variable that points at the NCCL
// library to load, e.g.
// PURECUDA_LIBNCCL=/opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2.
// When it is set, that library is the only one tried.
const EnvLibrary = "PURECUDA_LIBNCCL"

// ErrNoLibrary is matched (errors.Is) by the error of every call made when
// the NCCL library cannot be loaded, on systems NCCL does not support too.
var ErrNoLibrary = errors.New("nccl: NCCL library not loaded")

// ErrSymbol is matched (errors.Is) by every SymbolError.
var ErrSymbol = errors.New("nccl: NCCL entry point unavailable")

// LoadError reports that no NCCL library could be loaded; it names every
// place tried.
type LoadError = dl.LoadError

// search is where Load looks (see Load).
var search = &dl.Search{
	Pkg:     "nccl",
	What:    "NCCL",
	Env:     EnvLibrary,
	Names:   libraryNames,
	Pip:     []string{"nccl", "cu13"},
	Install: "pip install nvidia-nccl-cu13, or NVIDIA's libnccl2 package",
}

// ncclLibrary is the loaded NCCL library.
type ncclLibrary struct {
	lib     dl.Library
	path    string
	version int // ncclGetVersion: major*10000 + minor*100 + patch
}

var lazy = dl.NewLazy(func() (*ncclLibrary, error) { return open(os.Getenv) },
	func(l *ncclLibrary) dl.Library { return l.lib },
	func(l *ncclLibrary, symbol string) error {
		return &SymbolError{Symbol: symbol, Path: l.path, Version: l.version}
	})

// Load opens the NCCL library, if it is not open yet. The first NCCL call
// does it too; Load is for programs that want the error early, or that
// set PURECUDA_LIBNCCL after a failed attempt: unlike the lazy load,
// which remembers its failure, Load tries again.
//
// NCCL exists for Linux only: on other systems Load fails at once, saying
// so. With $PURECUDA_LIBNCCL set, that library is loaded or the load
// fails. Otherwise libnccl.so.2 through the dynamic loader
// (LD_LIBRARY_PATH, the ld.so cache), then /usr/local/cuda/lib64,
// /usr/local/cuda/targets/*/lib, $CUDA_PATH/lib64 and targets/*/lib,
// $CONDA_PREFIX/lib, and the nvidia/nccl/lib and nvidia/cu13/lib folders
// of the Python site-packages of $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local,
// /usr/local and /usr (NVIDIA's nvidia-nccl-cu13 wheel, which PyTorch
// installs, puts it in nvidia/nccl/lib). A library that opens but lacks
// ncclCommInitRankScalable (NCCL 2.23 and later have it) is not taken. A
// failure is a *LoadError that names every place tried.
func Load() error {
	_, err := lazy.Load()
	return err
}

// Library describes the loaded NCCL library.
type Library struct {
	Path    string // as it was opened
	Version int    // ncclGetVersion: major*10000 + minor*100 + patch, 22809 for 2.28.9
}

// Loaded describes the loaded NCCL library; ok is false when none is.
func Loaded() (lib Library, ok bool) {
	l := lazy.Loaded()
	if l == nil {
		return Library{}, false
	}
	return Library{Path: l.path, Version: l.version}, true
}

// SymbolError reports an NCCL entry point that the loaded library lacks
// (an older NCCL). Only the function that needs it fails.
type SymbolError struct {
	Symbol  string // the C symbol, e.g. "ncclCommShrink"
	Path    string // the library as it was opened
	Version int    // its version, as Library.Version
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("nccl: %s is not provided by %s (NCCL %d.%d.%d)", e.Symbol, e.Path, e.Version/10000, e.Version/100%100, e.Version%100)
}

// Is reports whether target is ErrSymbol, so errors.Is(err, ErrSymbol)
// catches every SymbolError.
func (e *SymbolError) Is(target error) bool { return target == ErrSymbol }
