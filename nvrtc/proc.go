package nvrtc

import (
	"fmt"
	"sync/atomic"

	"github.com/purecuda/purecuda/internal/dl"
)

// proc is one NVRTC entry point. The generated wrappers hold one each and
// resolve it on first use by its symbol's name (NVRTC has nothing like
// cuGetProcAddress), loading the library if need be.
type proc struct {
	addr   uintptr // the resolved address; 0 until resolved (atomic)
	symbol string  // the C symbol, e.g. "nvrtcCompileProgram"
}

// fn returns the entry point's address, resolving it on first use. It is
// small enough to be inlined into every wrapper.
func (p *proc) fn() (uintptr, error) {
	if a := atomic.LoadUintptr(&p.addr); a != 0 {
		return a, nil
	}
	return lazy.Resolve(&p.addr, p.symbol, func(l *nvrtcLibrary) dl.Library { return l.lib },
		func(l *nvrtcLibrary) error {
			return &SymbolError{Symbol: p.symbol, Path: l.path, Major: l.major, Minor: l.minor}
		})
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
