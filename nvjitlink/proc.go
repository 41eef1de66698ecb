package nvjitlink

import (
	"fmt"
	"sync/atomic"

	"github.com/purecuda/purecuda/internal/dl"
)

// proc is one nvJitLink entry point. The generated wrappers hold one each
// and resolve it on first use by its symbol's name, loading the library if
// need be.
type proc struct {
	addr   uintptr // the resolved address; 0 until resolved (atomic)
	symbol string  // the C symbol, e.g. "__nvJitLinkCreate_13_0"
}

// fn returns the entry point's address, resolving it on first use.
func (p *proc) fn() (uintptr, error) {
	if a := atomic.LoadUintptr(&p.addr); a != 0 {
		return a, nil
	}
	return lazy.Resolve(&p.addr, p.symbol, func(l *jitLinkLibrary) dl.Library { return l.lib },
		func(l *jitLinkLibrary) error {
			return &SymbolError{Symbol: p.symbol, Path: l.path, Major: l.major, Minor: l.minor}
		})
}

// result turns an nvJitLinkResult into an error: nil for success, else the
// Result itself, boxed without allocating.
func (p *proc) result(r uintptr) error {
	if int32(r) == 0 {
		return nil
	}
	return Result(int32(r)).boxed()
}

// SymbolError reports an nvJitLink entry point that the loaded library
// lacks (the versioned symbols of another CUDA release). Only the function
// that needs it fails.
type SymbolError struct {
	Symbol       string // the C symbol, e.g. "__nvJitLinkCreate_13_0"
	Path         string // the library as it was opened
	Major, Minor int    // its version (nvJitLinkVersion)
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("nvjitlink: %s is not provided by %s (nvJitLink %d.%d)", e.Symbol, e.Path, e.Major, e.Minor)
}

// Is reports whether target is ErrSymbol, so errors.Is(err, ErrSymbol)
// catches every SymbolError.
func (e *SymbolError) Is(target error) bool { return target == ErrSymbol }
