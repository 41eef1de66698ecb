package nvml

import (
	"errors"
	"fmt"
	"os"

	"github.com/purecuda/purecuda/internal/dl"
)

// EnvLibrary names the environment variable that points at the NVML
// library to load, e.g. PURECUDA_LIBNVML=/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1.
// When it is set, that library is the only one tried.
const EnvLibrary = "PURECUDA_LIBNVML"

// ErrNoLibrary is matched (errors.Is) by the error of every call made when
// the NVML library cannot be loaded.
var ErrNoLibrary = errors.New("nvml: NVML library not loaded")

// ErrSymbol is matched (errors.Is) by every SymbolError.
var ErrSymbol = errors.New("nvml: NVML entry point unavailable")

// LoadError reports that no NVML library could be loaded; it names every
// place tried.
type LoadError = dl.LoadError

// Attempt is one place Load looked for the library.
type Attempt = dl.Attempt

// search names the library in a LoadError; its places are NVML's own
// (searchPlaces), not a toolkit's.
var search = &dl.Search{
	Pkg:     "nvml",
	What:    "NVML",
	Env:     EnvLibrary,
	Names:   []string{libraryName},
	Install: "it comes with the NVIDIA driver",
}

// nvmlLibrary is the loaded NVML library.
type nvmlLibrary struct {
	lib  dl.Library
	path string
}

var lazy = dl.NewLazy(func() (*nvmlLibrary, error) { return open(os.Getenv) },
	func(l *nvmlLibrary) dl.Library { return l.lib },
	func(l *nvmlLibrary, symbol string) error { return &SymbolError{Symbol: symbol, Path: l.path} })

// loaded is the open library, or nil.
func loaded() *nvmlLibrary { return lazy.Loaded() }

// Load opens the NVML library, if it is not open yet. Init and the first
// call of any generated function do it too; Load is for programs that want
// the error early, or that set PURECUDA_LIBNVML after a failed attempt:
// unlike the lazy load, which remembers its failure, Load tries again.
// Loading does not initialize NVML: that is Init.
//
// With $PURECUDA_LIBNVML set, that library is loaded or the load fails.
// Otherwise, on Linux: libnvidia-ml.so.1 through the dynamic loader
// (LD_LIBRARY_PATH, the ld.so cache; the driver installs it beside
// libcuda.so.1), then the folders where containers and WSL put it
// (/usr/local/nvidia/lib64, /usr/lib/wsl/lib). On Windows: nvml.dll in
// the system folder (System32), then in %ProgramW6432%\NVIDIA
// Corporation\NVSMI, where older drivers install it; never through the
// DLL search path. A library that opens but lacks nvmlInit_v2 is not
// taken. A failure is a *LoadError that names every place tried.
func Load() error {
	_, err := lazy.Load()
	return err
}

// open finds and opens the NVML library as Load describes, reading the
// environment through getenv.
func open(getenv func(string) string) (*nvmlLibrary, error) {
	fromEnv := getenv(EnvLibrary) != ""
	places := searchPlaces(getenv)
	if fromEnv {
		places = []string{getenv(EnvLibrary)}
	}
	l, tried, ok := dl.OpenFirst(search, places, openNVML)
	if !ok {
		return nil, &LoadError{Search: search, Tried: tried, FromEnv: fromEnv, Is_: ErrNoLibrary}
	}
	return l, nil
}

// openNVML checks that lib is NVML: it has nvmlInit_v2.
func openNVML(lib dl.Library, path string) (*nvmlLibrary, error) {
	if _, err := dl.HasSymbol(lib, "nvmlInit_v2", "NVML"); err != nil {
		return nil, err
	}
	return &nvmlLibrary{lib: lib, path: path}, nil
}

// Library describes the loaded NVML library.
type Library struct {
	Path string // as it was opened
}

// Loaded describes the loaded NVML library; ok is false when none is.
func Loaded() (lib Library, ok bool) {
	l := loaded()
	if l == nil {
		return Library{}, false
	}
	return Library{Path: l.path}, true
}

// SymbolError reports an NVML entry point that the loaded library lacks
// (an older driver's NVML). Only the function that needs it fails.
type SymbolError struct {
	Symbol string // the C symbol, e.g. "nvmlDeviceGetTemperatureV"
	Path   string // the library as it was opened
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("nvml: %s is not provided by %s (an older NVIDIA driver)", e.Symbol, e.Path)
}

// Is reports whether target is ErrSymbol, so errors.Is(err, ErrSymbol)
// catches every SymbolError.
func (e *SymbolError) Is(target error) bool { return target == ErrSymbol }
