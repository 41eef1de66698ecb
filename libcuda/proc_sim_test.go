//go:build !gpu

package libcuda_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// A failure of cuGetProcAddress_v2 while an entry point is resolved comes
// back as an error whose message names the lookup and the driver's
// description (cuGetErrorString, itself resolved on demand), without a
// deadlock; the next call resolves the entry point again and succeeds.
func TestProcAddressFailureIsAnErrorAndTheNextCallRetries(t *testing.T) {
	for _, name := range []string{"cuDeviceGetCount", "cuGetErrorString"} {
		if !libcuda.ForgetProc(name) {
			t.Fatalf("no entry point %s", name)
		}
	}
	libcuda.ForgetDescriptions()
	testenv.SimFailNext(t, "cuGetProcAddress", 1, libcuda.CUDA_ERROR_UNKNOWN)

	var err error
	var msg string
	testenv.Recv(t, testenv.Go(func() {
		var n int32
		err = libcuda.DeviceGetCount(&n)
		if err != nil {
			msg = err.Error() // asks cuGetErrorString, resolving it now
		}
	}), "DeviceGetCount with cuGetProcAddress_v2 failing (a deadlock if this times out)")
	if !errors.Is(err, libcuda.CUDA_ERROR_UNKNOWN) {
		t.Fatalf("DeviceGetCount = %v, want CUDA_ERROR_UNKNOWN from cuGetProcAddress_v2", err)
	}
	var pe *libcuda.ProcAddressError
	if !errors.As(err, &pe) || pe.Name != "cuDeviceGetCount" {
		t.Fatalf("error %v (%T), want a *ProcAddressError for cuDeviceGetCount", err, err)
	}
	for _, want := range []string{"cuGetProcAddress_v2(cuDeviceGetCount", "CUDA_ERROR_UNKNOWN", "an unknown error"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if errors.Is(err, libcuda.ErrSymbol) {
		t.Error("a failed lookup reads as a missing symbol")
	}

	var n int32
	if err := libcuda.DeviceGetCount(&n); err != nil || n < 1 {
		t.Fatalf("DeviceGetCount after the failure = %d, %v; want it resolved again and working", n, err)
	}
}

// A symbol the driver lacks is a *SymbolError on every call.
func TestMissingSymbolStaysASymbolError(t *testing.T) {
	libcuda.ForgetProc("cuArrayCreate") // whatever an earlier test did
	for i := range 3 {
		err := libcuda.ArrayCreate(nil, nil) // the simulator has no arrays
		var se *libcuda.SymbolError
		if !errors.As(err, &se) || !se.Missing || !errors.Is(err, libcuda.ErrSymbol) || se.Symbol != "cuArrayCreate_v2" {
			t.Fatalf("call %d: ArrayCreate = %v (%T), want a *SymbolError for a missing cuArrayCreate_v2", i, err, err)
		}
	}
}
