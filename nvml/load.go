package nvml

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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

// errNotNVML is the attempt's error for a library without nvmlInit_v2.
var errNotNVML = errors.New("no nvmlInit_v2: not NVML")

// nvmlLibrary is the loaded NVML library.
type nvmlLibrary struct {
	lib  library
	path string
}

var (
	loadMu  sync.Mutex
	loaded  atomic.Pointer[nvmlLibrary]
	loadErr error // the last failure of the lazy load; guarded by loadMu
)

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
	if loaded.Load() != nil {
		return nil
	}
	loadMu.Lock()
	defer loadMu.Unlock()
	_, err := loadLocked()
	return err
}

// libraryOrLoad returns the loaded library, loading it on first use. A
// failed lazy load is remembered, so calls without a library stay cheap.
func libraryOrLoad() (*nvmlLibrary, error) {
	if l := loaded.Load(); l != nil {
		return l, nil
	}
	loadMu.Lock()
	defer loadMu.Unlock()
	if loadErr != nil {
		return nil, loadErr
	}
	return loadLocked()
}

func loadLocked() (*nvmlLibrary, error) {
	if l := loaded.Load(); l != nil {
		return l, nil
	}
	l, err := open(os.Getenv)
	if err != nil {
		loadErr = err
		return nil, err
	}
	loadErr = nil
	loaded.Store(l)
	return l, nil
}

// open finds and opens the NVML library as Load describes, reading the
// environment through getenv.
func open(getenv func(string) string) (*nvmlLibrary, error) {
	if p := getenv(EnvLibrary); p != "" {
		l, tried := openFirst([]string{p})
		if l == nil {
			return nil, &LoadError{Tried: tried, FromEnv: true}
		}
		return l, nil
	}
	l, tried := openFirst(searchPlaces(getenv))
	if l == nil {
		return nil, &LoadError{Tried: tried}
	}
	return l, nil
}

// openFirst opens the first of places (library paths, or names for the
// system's loader) that is NVML. It returns the library, or nil and every
// attempt.
func openFirst(places []string) (*nvmlLibrary, []Attempt) {
	var tried []Attempt
	for _, path := range places {
		l, err := openNVML(path)
		if err == nil {
			return l, nil
		}
		tried = append(tried, Attempt{Path: path, Err: err})
	}
	return nil, tried
}

// openNVML opens path and checks that it is NVML: it has nvmlInit_v2.
func openNVML(path string) (*nvmlLibrary, error) {
	lib, err := openLibrary(path)
	if err != nil {
		return nil, err
	}
	if _, ok := lib.sym("nvmlInit_v2"); !ok {
		lib.close()
		return nil, errNotNVML
	}
	return &nvmlLibrary{lib: lib, path: path}, nil
}

// Attempt is one place Load looked for the library.
type Attempt struct {
	Path string
	Err  error
}

// LoadError reports that no NVML library could be loaded.
type LoadError struct {
	Tried   []Attempt
	FromEnv bool // the one place tried was $PURECUDA_LIBNVML
}

func (e *LoadError) Error() string {
	var b strings.Builder
	if e.FromEnv {
		fmt.Fprintf(&b, "nvml: cannot load the NVML library that $%s names", EnvLibrary)
	} else {
		b.WriteString("nvml: cannot load the NVML library")
	}
	if len(e.Tried) > 0 {
		b.WriteString("; tried:")
		for _, a := range e.Tried {
			fmt.Fprintf(&b, "\n\t%s: %v", a.Path, a.Err)
		}
	}
	if e.FromEnv {
		fmt.Fprintf(&b, "\npoint %s at NVML (%s), or unset it to search the usual places", EnvLibrary, libraryName)
	} else {
		fmt.Fprintf(&b, "\nNVML comes with the NVIDIA driver; install the driver, or set %s to the path of %s", EnvLibrary, libraryName)
	}
	return b.String()
}

// Is reports whether target is ErrNoLibrary.
func (e *LoadError) Is(target error) bool { return target == ErrNoLibrary }

// Library describes the loaded NVML library.
type Library struct {
	Path string // as it was opened
}

// Loaded describes the loaded NVML library; ok is false when none is.
func Loaded() (lib Library, ok bool) {
	l := loaded.Load()
	if l == nil {
		return Library{}, false
	}
	return Library{Path: l.path}, true
}

// library is an opened shared library.
type library interface {
	sym(name string) (uintptr, bool)
	close()
}
