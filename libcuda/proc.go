package libcuda

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/purecuda/purecuda/internal/dl"
)

// proc is one driver entry point. The generated wrappers hold one each and
// resolve it on first use: through cuGetProcAddress_v2 by its base name and
// ABI version, or, with a driver that lacks cuGetProcAddress_v2, by looking
// up the versioned symbol the header declares.
type proc struct {
	addr    uintptr // the resolved address; 0 until resolved (atomic)
	name    string  // base name, e.g. "cuMemHostRegister"
	symbol  string  // the symbol the header declares, e.g. "cuMemHostRegister_v2"
	version int32   // ABI version from cudaTypedefs.h, e.g. 6050
	// missing is set once the driver has said it lacks the entry point
	// (or has it only at an older ABI): that answer cannot change while
	// the library stays loaded. Guarded by resolveMu.
	missing *SymbolError
}

// resolveMu serializes resolution, which happens once per entry point.
// Nothing that can call the driver through another proc (formatting a
// Result, which asks cuGetErrorString) runs while it is held.
var resolveMu sync.Mutex

// fn returns the entry point's address, resolving it (and loading the
// driver) on first use. It is small enough to be inlined into every wrapper:
// after the first call it costs one load and one branch.
func (p *proc) fn() (uintptr, error) {
	if a := atomic.LoadUintptr(&p.addr); a != 0 {
		return a, nil
	}
	return p.resolve()
}

// resolve looks p up. A lookup that failed for another reason than a
// missing symbol (cuGetProcAddress_v2 itself returned an error) is not
// remembered: the next call tries again.
func (p *proc) resolve() (uintptr, error) {
	d, err := lazy.Get()
	if err != nil {
		return 0, err
	}
	resolveMu.Lock()
	a, missing := p.addr, p.missing
	var lerr error
	if a == 0 && missing == nil {
		a, missing, lerr = lookup(d, p)
		if a != 0 {
			atomic.StoreUintptr(&p.addr, a)
		}
		p.missing = missing
	}
	resolveMu.Unlock()
	switch {
	case a != 0:
		return a, nil
	case missing != nil:
		return 0, missing
	}
	return 0, lerr
}

// result turns a CUresult into an error: nil for CUDA_SUCCESS, else the
// Result itself (traced when PURECUDA_TRACE is set).
func (p *proc) result(r uintptr) error {
	if int32(r) == 0 {
		return nil
	}
	return p.failed(Result(int32(r)))
}

func (p *proc) failed(r Result) error {
	if tracing.Load() {
		trace(p.symbol, r)
	}
	return r.boxed()
}

// The values of CUdriverProcAddressQueryResult and the flag that asks for
// the legacy default stream semantics (not the per-thread variants).
const (
	procStatusSuccess       = 0
	procStatusVersionTooLow = 2
	procAddressLegacyStream = 1
)

// lookup finds p's address in the loaded driver d: the address, or the
// SymbolError that says the driver lacks it, or the error of
// cuGetProcAddress_v2 itself. It runs under resolveMu and so formats
// nothing: a ProcAddressError is formatted when its Error method is called.
func lookup(d *dl.Opened, p *proc) (uintptr, *SymbolError, error) {
	if int(p.version) > d.Version {
		return 0, &SymbolError{Symbol: p.symbol, Version: int(p.version), Driver: d.Version}, nil
	}
	getProcAddress, _ := d.Lib.Sym("cuGetProcAddress_v2")
	if getProcAddress == 0 {
		a, ok := d.Lib.Sym(p.symbol)
		if !ok {
			return 0, &SymbolError{Symbol: p.symbol, Version: int(p.version), Driver: d.Version, Missing: true}, nil
		}
		return a, nil, nil
	}
	var name [128]byte // base names are short; a longer one is no entry point
	if len(p.name) >= len(name) {
		return 0, &SymbolError{Symbol: p.symbol, Version: int(p.version), Driver: d.Version, Missing: true}, nil
	}
	copy(name[:], p.name)
	var addr uintptr
	var status int32
	var f struct {
		frame
		a0 unsafe.Pointer // const char *symbol
		a1 unsafe.Pointer // void **pfn
		a2 uintptr        // int cudaVersion
		a3 uintptr        // cuuint64_t flags
		a4 unsafe.Pointer // CUdriverProcAddressQueryResult *symbolStatus
		_  [3]uintptr
	}
	f.fn, f.n = getProcAddress, 5
	f.a0, f.a1, f.a2, f.a3, f.a4 = unsafe.Pointer(&name[0]), unsafe.Pointer(&addr), uintptr(p.version), procAddressLegacyStream, unsafe.Pointer(&status)
	call(&f.frame)
	switch r := Result(int32(f.r)); {
	case r != CUDA_SUCCESS:
		return 0, nil, &ProcAddressError{Name: p.name, Version: int(p.version), Result: r}
	case status == procStatusVersionTooLow:
		return 0, &SymbolError{Symbol: p.symbol, Version: int(p.version), Driver: d.Version}, nil
	case status != procStatusSuccess || addr == 0:
		return 0, &SymbolError{Symbol: p.symbol, Version: int(p.version), Driver: d.Version, Missing: true}, nil
	}
	return addr, nil, nil
}

// ProcAddressError reports that cuGetProcAddress_v2 failed while an entry
// point was being resolved. Unlike a SymbolError it is not final: the
// next call of the function that needed the entry point tries again.
type ProcAddressError struct {
	Name    string // the base name looked up, e.g. "cuDeviceGetCount"
	Version int    // the ABI version asked for
	Result  Result // what cuGetProcAddress_v2 returned
}

func (e *ProcAddressError) Error() string {
	return "libcuda: cuGetProcAddress_v2(" + e.Name + ", " + strconv.Itoa(e.Version) + "): " + e.Result.Error()
}

// Unwrap returns the driver's Result, so errors.Is matches it.
func (e *ProcAddressError) Unwrap() error { return e.Result }

// SymbolError reports a driver entry point that cannot be used with the
// loaded driver: the driver lacks it, or its ABI version is newer than the
// driver. Only the function that needs it fails; everything else works.
type SymbolError struct {
	Symbol  string // the C symbol, e.g. "cuMemHostRegister_v2"
	Version int    // the ABI version the binding calls it with, e.g. 6050
	Driver  int    // the loaded driver's version, e.g. 13000
	Missing bool   // the driver does not have it at all
}

func (e *SymbolError) Error() string {
	if e.Missing {
		return fmt.Sprintf("libcuda: %s (ABI %s) is not provided by the loaded driver (version %s)",
			e.Symbol, FormatVersion(e.Version), FormatVersion(e.Driver))
	}
	return fmt.Sprintf("libcuda: %s needs driver version %s or later; the loaded driver is %s",
		e.Symbol, FormatVersion(e.Version), FormatVersion(e.Driver))
}

// Is reports whether target is ErrSymbol, so errors.Is(err, ErrSymbol)
// catches every SymbolError.
func (e *SymbolError) Is(target error) bool { return target == ErrSymbol }

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
	d := lazy.Loaded()
	if d == nil {
		return DriverInfo{}, false
	}
	_, gpa := d.Lib.Sym("cuGetProcAddress_v2")
	return DriverInfo{Path: d.Path, Version: d.Version, ProcAddress: gpa}, true
}

// FormatVersion writes a CUDA version number such as 12050 as "12.5".
func FormatVersion(v int) string {
	if v%10 != 0 {
		return fmt.Sprintf("%d.%d.%d", v/1000, v%1000/10, v%10)
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// Symbols lists every entry point of the binding with what the loaded
// driver says about it, resolving each one (and loading the driver).
func Symbols() ([]SymbolInfo, error) {
	if _, err := lazy.Get(); err != nil {
		return nil, err
	}
	out := make([]SymbolInfo, len(procs))
	for i, p := range procs {
		_, err := p.fn()
		out[i] = SymbolInfo{Name: p.name, Symbol: p.symbol, Version: int(p.version), Err: err}
	}
	return out, nil
}

// SymbolInfo describes one entry point of the binding.
type SymbolInfo struct {
	Name    string // base name, e.g. "cuMemHostRegister"
	Symbol  string // versioned C symbol, e.g. "cuMemHostRegister_v2"
	Version int    // ABI version the binding asks for
	Err     error  // nil when the loaded driver provides it
}
