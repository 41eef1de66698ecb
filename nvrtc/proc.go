package nvrtc

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// proc is one NVRTC entry point. The generated wrappers hold one each and
// resolve it on first use by its symbol's name (NVRTC has nothing like
// cuGetProcAddress), loading the library if need be.
type proc struct {
	addr   uintptr // the resolved address; 0 until resolved (atomic)
	symbol string  // the C symbol, e.g. "nvrtcCompileProgram"
	err    error   // why resolution failed; guarded by resolveMu
}

// resolveMu serializes resolution, which happens once per entry point.
var resolveMu sync.Mutex

// fn returns the entry point's address, resolving it on first use. It is
// small enough to be inlined into every wrapper.
func (p *proc) fn() (uintptr, error) {
	if a := atomic.LoadUintptr(&p.addr); a != 0 {
		return a, nil
	}
	return p.resolve()
}

func (p *proc) resolve() (uintptr, error) {
	l, err := libraryOrLoad()
	if err != nil {
		return 0, err
	}
	resolveMu.Lock()
	defer resolveMu.Unlock()
	if a := p.addr; a != 0 {
		return a, nil
	}
	if p.err != nil {
		return 0, p.err
	}
	a, ok := l.lib.sym(p.symbol)
	if !ok {
		p.err = &SymbolError{Symbol: p.symbol, Path: l.path, Major: l.major, Minor: l.minor}
		return 0, p.err
	}
	atomic.StoreUintptr(&p.addr, a)
	return a, nil
}

// result turns an nvrtcResult into an error: nil for NVRTC_SUCCESS, else
// the Result itself, boxed without allocating.
func (p *proc) result(r uintptr) error {
	if int32(r) == 0 {
		return nil
	}
	return Result(int32(r)).boxed()
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
