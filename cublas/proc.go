package cublas

import (
	"fmt"
	"sync/atomic"

	"github.com/purecuda/purecuda/internal/dl"
)

// proc is one cuBLAS entry point. The generated wrappers hold one each and
// resolve it on first use by its symbol's name, loading the library if
// need be.
type proc struct {
	addr   uintptr // the resolved address; 0 until resolved (atomic)
	symbol string  // the C symbol, e.g. "cublasSgemm_v2"
}

// fn returns the entry point's address, resolving it on first use. It is
// small enough to be inlined into every wrapper.
func (p *proc) fn() (uintptr, error) {
	if a := atomic.LoadUintptr(&p.addr); a != 0 {
		return a, nil
	}
	return lazy.Resolve(&p.addr, p.symbol, func(l *cublasLibrary) dl.Library { return l.lib },
		func(l *cublasLibrary) error { return &SymbolError{Symbol: p.symbol, Path: l.path, Version: l.version} })
}

// result turns a cublasStatus_t into an error: nil for success, else the
// Status itself, boxed without allocating.
func (p *proc) result(r uintptr) error {
	if int32(r) == 0 {
		return nil
	}
	return Status(int32(r)).boxed()
}

// SymbolError reports a cuBLAS entry point that the loaded library lacks
// (an older cuBLAS). Only the function that needs it fails.
type SymbolError struct {
	Symbol  string // the C symbol, e.g. "cublasGemmGroupedBatchedEx_64"
	Path    string // the library as it was opened
	Version int    // its version, as Library.Version
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("cublas: %s is not provided by %s (cuBLAS %d.%d.%d)", e.Symbol, e.Path, e.Version/10000, e.Version/100%100, e.Version%100)
}

// Is reports whether target is ErrSymbol, so errors.Is(err, ErrSymbol)
// catches every SymbolError.
func (e *SymbolError) Is(target error) bool { return target == ErrSymbol }
