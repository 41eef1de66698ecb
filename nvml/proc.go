package nvml

import (
	"fmt"
	"sync/atomic"

	"github.com/purecuda/purecuda/internal/dl"
)

// proc is one NVML entry point. The generated wrappers hold one each and
// resolve it on first use by its symbol's name, loading the library if need
// be. The symbol is the versioned name nvml.h's #defines choose
// (nvmlDeviceGetCount is nvmlDeviceGetCount_v2).
type proc struct {
	addr   uintptr // the resolved address; 0 until resolved (atomic)
	symbol string  // the C symbol, e.g. "nvmlDeviceGetCount_v2"
}

// fn returns the entry point's address, resolving it on first use. It is
// small enough to be inlined into every wrapper.
func (p *proc) fn() (uintptr, error) {
	if a := atomic.LoadUintptr(&p.addr); a != 0 {
		return a, nil
	}
	return lazy.Resolve(&p.addr, p.symbol, func(l *nvmlLibrary) dl.Library { return l.lib },
		func(l *nvmlLibrary) error { return &SymbolError{Symbol: p.symbol, Path: l.path} })
}

// result turns an nvmlReturn_t into an error: nil for NVML_SUCCESS, else
// the Return itself, boxed without allocating.
func (p *proc) result(r uintptr) error {
	if int32(r) == 0 {
		return nil
	}
	return Return(int32(r)).boxed()
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
