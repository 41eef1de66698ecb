package nvrtc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
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

// errNotNVRTC is the attempt's error for a library without nvrtcVersion.
var errNotNVRTC = errors.New("no nvrtcVersion: not NVRTC")

// nvrtcLibrary is the loaded NVRTC library.
type nvrtcLibrary struct {
	lib          library
	path         string
	major, minor int // nvrtcVersion
}

var (
	loadMu  sync.Mutex
	loaded  atomic.Pointer[nvrtcLibrary]
	loadErr error // the last failure of the lazy load; guarded by loadMu
)

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
func libraryOrLoad() (*nvrtcLibrary, error) {
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

func loadLocked() (*nvrtcLibrary, error) {
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

// open finds and opens the NVRTC library as Load describes, reading the
// environment through getenv.
func open(getenv func(string) string) (*nvrtcLibrary, error) {
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

// openFirst opens the first place that holds an NVRTC library. A place is
// a library file, a name for the system's loader, or a folder in which
// the names of libraryNames are looked for. It returns the library, or nil
// and every attempt.
func openFirst(places []string) (*nvrtcLibrary, []Attempt) {
	var tried []Attempt
	for _, place := range places {
		paths := []string{place}
		if st, err := os.Stat(place); filepath.IsAbs(place) && err == nil && st.IsDir() {
			paths = nil
			for _, name := range libraryNames {
				if _, err := os.Stat(filepath.Join(place, name)); err == nil {
					paths = append(paths, filepath.Join(place, name))
				}
			}
			if len(paths) == 0 {
				tried = append(tried, Attempt{Path: place, Err: fmt.Errorf("no %s there", strings.Join(libraryNames, ", "))})
				continue
			}
		}
		for _, path := range paths {
			l, err := openNVRTC(path)
			if err == nil {
				return l, nil
			}
			tried = append(tried, Attempt{Path: path, Err: err})
		}
	}
	return nil, tried
}

// openNVRTC opens path and checks that it is NVRTC: it has nvrtcVersion,
// and that answers.
func openNVRTC(path string) (*nvrtcLibrary, error) {
	lib, err := openLibrary(path)
	if err != nil {
		return nil, err
	}
	version, ok := lib.sym("nvrtcVersion")
	if !ok {
		lib.close()
		return nil, errNotNVRTC
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
		lib.close()
		return nil, fmt.Errorf("nvrtcVersion: %w", r)
	}
	return &nvrtcLibrary{lib: lib, path: path, major: int(major), minor: int(minor)}, nil
}

// Attempt is one place Load looked for the library.
type Attempt struct {
	Path string
	Err  error
}

// LoadError reports that no NVRTC library could be loaded.
type LoadError struct {
	Tried   []Attempt
	FromEnv bool // the one place tried was $PURECUDA_LIBNVRTC
}

func (e *LoadError) Error() string {
	var b strings.Builder
	if e.FromEnv {
		fmt.Fprintf(&b, "nvrtc: cannot load the NVRTC library that $%s names", EnvLibrary)
	} else {
		b.WriteString("nvrtc: cannot load the NVRTC library")
	}
	if len(e.Tried) > 0 {
		b.WriteString("; tried:")
		for _, a := range e.Tried {
			fmt.Fprintf(&b, "\n\t%s: %v", a.Path, a.Err)
		}
	}
	if e.FromEnv {
		fmt.Fprintf(&b, "\npoint %s at NVRTC (%s), or unset it to search the usual places", EnvLibrary, libraryNames[0])
	} else {
		fmt.Fprintf(&b, "\ninstall NVRTC (a CUDA toolkit, or pip install nvidia-cuda-nvrtc) or set %s to its path (%s)", EnvLibrary, libraryNames[0])
	}
	return b.String()
}

// Is reports whether target is ErrNoLibrary.
func (e *LoadError) Is(target error) bool { return target == ErrNoLibrary }

// Library describes the loaded NVRTC library.
type Library struct {
	Path         string // as it was opened
	Major, Minor int    // nvrtcVersion, e.g. 13 and 0
}

// Loaded describes the loaded NVRTC library; ok is false when none is.
func Loaded() (lib Library, ok bool) {
	l := loaded.Load()
	if l == nil {
		return Library{}, false
	}
	return Library{Path: l.path, Major: l.major, Minor: l.minor}, true
}

// library is an opened shared library.
type library interface {
	sym(name string) (uintptr, bool)
	close()
}
