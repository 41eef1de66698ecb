package nccl

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
)

// The search follows $CUDA_PATH, conda and pip's nvidia/nccl/lib (where
// NVIDIA's nvidia-nccl-cu13 wheel, which PyTorch installs, puts
// libnccl.so.2) and nvidia/cu13/lib, after the names through the loader.
func TestSearchPlacesFollowToolkitCondaAndPip(t *testing.T) {
	if runtime.GOOS != "linux" {
		return // TestNCCLIsUnavailableOffLinux
	}
	testenv.CheckSearch(t, search)
}

// A path in the variable is the only place tried; a library there that
// is not NCCL is refused, and the error names the variable.
func TestTheVariableIsTheOnlyPlaceTried(t *testing.T) {
	if runtime.GOOS != "linux" {
		return // TestNCCLIsUnavailableOffLinux
	}
	testenv.CheckVariableOnly(t, search, ErrNoLibrary, func(getenv func(string) string) error {
		_, err := open(getenv)
		return err
	}, "ncclCommInitRankScalable")
}

// Off Linux, NCCL is not available, whatever the environment says, and
// every call says so.
func TestNCCLIsUnavailableOffLinux(t *testing.T) {
	if runtime.GOOS == "linux" {
		return // the search tests above
	}
	_, err := open(func(string) string { return "/somewhere/libnccl.so.2" })
	if !errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), "not available on "+runtime.GOOS) {
		t.Errorf("open: %v", err)
	}
	if err := Load(); !errors.Is(err, ErrNoLibrary) {
		t.Errorf("Load: %v", err)
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
