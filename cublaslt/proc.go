package cublaslt

import (
	"fmt"
	"sync/atomic"

	"github.com/purecuda/purecuda/internal/dl"
)

// proc is one cuBLASLt entry point, resolved by its symbol's name on first
// use (loading the library if need be).
type proc struct {
	addr   uintptr // the resolved address; 0 until resolved (atomic)
	symbol string  // the C symbol, e.g. "cublasLtMatmul"
}

// fn returns the entry point's address, resolving it on first use.
func (p *proc) fn() (uintptr, error) {
	if a := atomic.LoadUintptr(&p.addr); a != 0 {
		return a, nil
	}
	return lazy.Resolve(&p.addr, p.symbol, func(l *ltLibrary) dl.Library { return l.lib },
		func(l *ltLibrary) error { return &SymbolError{Symbol: p.symbol, Path: l.path, Version: int(l.version)} })
}

// result turns a cublasStatus_t into an error (a cublas.Status), boxed
// without allocating.
func (p *proc) result(r uintptr) error { return statusErr(r) }

// SymbolError reports a cuBLASLt entry point that the loaded library
// lacks (an older cuBLASLt). Only the function that needs it fails.
type SymbolError struct {
	Symbol  string // the C symbol
	Path    string // the library as it was opened
	Version int    // cublasLtGetVersion
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("cublaslt: %s is not provided by %s (cuBLASLt %d)", e.Symbol, e.Path, e.Version)
}

// Is reports whether target is ErrSymbol.
func (e *SymbolError) Is(target error) bool { return target == ErrSymbol }
