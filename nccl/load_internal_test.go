package nccl

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// Off Linux, NCCL is not available, and every call says so.
func TestNCCLIsUnavailableOffLinux(t *testing.T) {
	if runtime.GOOS == "linux" {
		return // TestMissingEntryPointIsASymbolError
	}
	_, err := open(func(string) string { return "" })
	if !errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), "NVIDIA ships no NCCL for "+runtime.GOOS) {
		t.Errorf("open: %v", err)
	}
	if _, err := NewUniqueID(); !errors.Is(err, ErrNoLibrary) {
		t.Errorf("NewUniqueID: %v", err)
	}
}

// Result is an error with the C name, and errors.Is compares it; a failed
// Result returned by a wrapper is boxed once.
func TestResultIsAnError(t *testing.T) {
	var err error = InvalidUsage
	if !errors.Is(err, InvalidUsage) || !strings.HasPrefix(err.Error(), "ncclInvalidUsage (5)") {
		t.Errorf("%v", err)
	}
	if n := testing.AllocsPerRun(100, func() { err = procCommCount.result(uintptr(RemoteError)) }); n != 0 {
		t.Errorf("a failed result allocates %v times", n)
	}
}
