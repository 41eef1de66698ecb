//go:build !gpu

package nccl

import (
	"errors"
	"runtime"
	"testing"
	"unsafe"
)

// An entry point the loaded library lacks is a SymbolError from that
// function alone; the library answered ncclGetVersion. The stand-in has
// no ncclMemAlloc (the real NCCL has), so this runs on the stand-in only.
func TestMissingEntryPointIsASymbolError(t *testing.T) {
	if runtime.GOOS != "linux" {
		return // TestNCCLIsUnavailableOffLinux
	}
	if err := Load(); err != nil {
		t.Fatal(err)
	}
	var p unsafe.Pointer
	err := MemAlloc(&p, 16)
	var se *SymbolError
	if !errors.As(err, &se) || !errors.Is(err, ErrSymbol) || se.Symbol != "ncclMemAlloc" {
		t.Fatalf("got %v, want a SymbolError for ncclMemAlloc", err)
	}
	if lib, ok := Loaded(); !ok || lib.Version < 22300 {
		t.Errorf("Loaded: %+v, %v", lib, ok)
	}
}
