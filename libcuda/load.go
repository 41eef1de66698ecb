package libcuda

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// EnvLibrary names the environment variable that points at the driver
// library to load, e.g. PURECUDA_LIBCUDA=/usr/lib64/libcuda.so.1.
const EnvLibrary = "PURECUDA_LIBCUDA"

// ErrNoDriver is matched (errors.Is) by the error of every call made when
// the driver library cannot be loaded.
var ErrNoDriver = errors.New("libcuda: CUDA driver library not loaded")

// ErrSymbol is matched (errors.Is) by every SymbolError.
var ErrSymbol = errors.New("libcuda: driver entry point unavailable")

// driver is the loaded driver library.
type driver struct {
	lib            library
	path           string
	version        int     // cuDriverGetVersion
	getProcAddress uintptr // cuGetProcAddress_v2, or 0 when the driver lacks it
}

var (
	loadMu  sync.Mutex
	loaded  atomic.Pointer[driver]
	loadErr error // the last failure of the lazy load; guarded by loadMu
)

// Load opens the CUDA driver library, if it is not open yet. The first
// driver call does it too; Load is for programs that want the error early,
// or that set PURECUDA_LIBCUDA after a failed attempt: unlike the lazy load,
// which remembers its failure, Load tries again.
//
// When $PURECUDA_LIBCUDA is set, the library it names is the only one
// tried: if it cannot be opened, or is no CUDA driver, that is the error
// (LoadError.FromEnv), with no fall back to the system's driver. Otherwise
// the library is looked for, in order: as libcuda.so.1 through the dynamic
// loader; then in /usr/lib/wsl/lib,
// /usr/local/nvidia/lib64, /usr/lib64, /usr/lib/x86_64-linux-gnu and
// /usr/lib/aarch64-linux-gnu. On Windows it is nvcuda.dll from the system
// directory. A failure is a *LoadError that names every place tried.
//
// Load does not call cuInit; Init does.
func Load() error {
	if loaded.Load() != nil {
		return nil
	}
	loadMu.Lock()
	defer loadMu.Unlock()
	_, err := loadLocked()
	return err
}

// driverOrLoad returns the loaded driver, loading it on first use. A failed
// lazy load is remembered, so calls without a driver stay cheap.
func driverOrLoad() (*driver, error) {
	if d := loaded.Load(); d != nil {
		return d, nil
	}
	loadMu.Lock()
	defer loadMu.Unlock()
	if loadErr != nil {
		return nil, loadErr
	}
	return loadLocked()
}

func loadLocked() (*driver, error) {
	if d := loaded.Load(); d != nil {
		return d, nil
	}
	d, err := openDriver()
	if err != nil {
		loadErr = err
		return nil, err
	}
	loadErr = nil
	loaded.Store(d)
	return d, nil
}

// openDriver opens the driver library and checks that it is one; it
// changes no package state.
func openDriver() (*driver, error) {
	lib, path, tried := openLibrary()
	env := os.Getenv(EnvLibrary)
	fromEnv := env != "" && (path == env || len(tried) == 1 && tried[0].Path == env)
	if lib == nil {
		return nil, &LoadError{Tried: tried, FromEnv: fromEnv}
	}
	d := &driver{lib: lib, path: path}
	getVersion, ok := lib.sym("cuDriverGetVersion")
	if !ok {
		lib.close()
		return nil, &LoadError{Tried: append(tried, Attempt{Path: path, Err: errors.New("opens, but has no cuDriverGetVersion: not a CUDA driver")}), FromEnv: fromEnv}
	}
	var v int32
	var f struct {
		frame
		a0 unsafe.Pointer
		_  [7]uintptr
	}
	f.fn, f.n, f.a0 = getVersion, 1, unsafe.Pointer(&v)
	call(&f.frame)
	if r := Result(int32(f.r)); r != CUDA_SUCCESS {
		lib.close()
		return nil, &LoadError{Tried: append(tried, Attempt{Path: path, Err: fmt.Errorf("cuDriverGetVersion: %w", r)}), FromEnv: fromEnv}
	}
	d.version = int(v)
	d.getProcAddress, _ = lib.sym("cuGetProcAddress_v2")
	return d, nil
}

// Attempt is one place Load looked for the driver library.
type Attempt struct {
	Path string
	Err  error
}

// LoadError reports that no driver library could be loaded.
type LoadError struct {
	Tried []Attempt
	// FromEnv is true when the one library tried was the one
	// $PURECUDA_LIBCUDA names: while it is set, no other place is tried.
	FromEnv bool
}

func (e *LoadError) Error() string {
	var b strings.Builder
	if e.FromEnv {
		fmt.Fprintf(&b, "libcuda: cannot load the CUDA driver library that $%s names", EnvLibrary)
	} else {
		b.WriteString("libcuda: cannot load the CUDA driver library")
	}
	if len(e.Tried) > 0 {
		b.WriteString("; tried:")
		for _, a := range e.Tried {
			fmt.Fprintf(&b, "\n\t%s: %v", a.Path, a.Err)
		}
	}
	if e.FromEnv {
		fmt.Fprintf(&b, "\npoint %s at the driver library (%s), or unset it to search the usual places", EnvLibrary, defaultLibraryName)
	} else {
		fmt.Fprintf(&b, "\nset %s to the driver library's path (%s) to point at it", EnvLibrary, defaultLibraryName)
	}
	return b.String()
}

// Is reports whether target is ErrNoDriver.
func (e *LoadError) Is(target error) bool { return target == ErrNoDriver }

// DriverInfo describes the loaded driver library.
type DriverInfo struct {
	Path    string // as it was opened
	Version int    // cuDriverGetVersion, e.g. 13000 for CUDA 13.0
	// ProcAddress is true when the driver has cuGetProcAddress_v2 and
	// entry points are resolved through it.
	ProcAddress bool
}

// Loaded describes the loaded driver library; ok is false when none is.
func Loaded() (lib DriverInfo, ok bool) {
	d := loaded.Load()
	if d == nil {
		return DriverInfo{}, false
	}
	return DriverInfo{Path: d.path, Version: d.version, ProcAddress: d.getProcAddress != 0}, true
}

// sym looks a symbol up in the driver library.
func (d *driver) sym(name string) (uintptr, bool) { return d.lib.sym(name) }

// library is an opened shared library.
type library interface {
	sym(name string) (uintptr, bool)
	close()
}
