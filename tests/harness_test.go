package tests

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
)

// The suite runs every test that needs a driver against the simulator
// (default) or the real driver (-tags gpu); driver_sim_test.go and
// driver_gpu_test.go say how each is set up.

// noDriver, when not empty, says why tests that need a driver skip. It is
// set only in simulator mode; on the GPU a missing driver fails the run.
var noDriver string

func TestMain(m *testing.M) {
	if err := setupDriver(); err != nil {
		if onGPU {
			fmt.Fprintf(os.Stderr, "tests: -tags gpu needs the CUDA driver: %v\n", err)
			os.Exit(1)
		}
		noDriver = err.Error()
		fmt.Fprintf(os.Stderr, "tests: no simulator, tests that need a driver skip: %v\n", err)
	}
	os.Exit(m.Run())
}

// needDriver initialises the driver for t, or skips t in simulator mode
// when the simulator could not be built.
func needDriver(t testing.TB) {
	t.Helper()
	if noDriver != "" {
		t.Skip("no driver: " + noDriver)
	}
	if err := libcuda.Init(0); err != nil {
		t.Fatalf("cuInit: %v", err)
	}
}

// primaryContext retains device ordinal's primary context for the test.
func primaryContext(t testing.TB, ordinal int) libcuda.Context {
	t.Helper()
	needDriver(t)
	var dev libcuda.Device
	if err := libcuda.DeviceGet(&dev, int32(ordinal)); err != nil {
		t.Fatalf("cuDeviceGet(%d): %v", ordinal, err)
	}
	var ctx libcuda.Context
	if err := libcuda.DevicePrimaryCtxRetain(&ctx, dev); err != nil {
		t.Fatalf("cuDevicePrimaryCtxRetain: %v", err)
	}
	t.Cleanup(func() {
		if err := libcuda.DevicePrimaryCtxRelease(dev); err != nil {
			t.Errorf("cuDevicePrimaryCtxRelease: %v", err)
		}
	})
	return ctx
}

// onPrimary retains device ordinal's primary context for the test and
// makes it current on the test goroutine's locked thread.
func onPrimary(t testing.TB, ordinal int) libcuda.Context {
	t.Helper()
	cu := primaryContext(t, ordinal)
	onThread(t, cu)
	return cu
}

// onThread locks the test goroutine to its OS thread with ctx current for
// the rest of the test.
func onThread(t testing.TB, ctx libcuda.Context) {
	t.Helper()
	runtime.LockOSThread()
	var prev libcuda.Context
	must(t, libcuda.CtxGetCurrent(&prev))
	must(t, libcuda.CtxSetCurrent(ctx))
	t.Cleanup(func() {
		must(t, libcuda.CtxSetCurrent(prev))
		runtime.UnlockOSThread()
	})
}

// must fails t at once when err is not nil.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// unsafePointer is unsafe.Pointer for tests that only pass addresses.
func unsafePointer[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }

// errorsJoin is errors.Join for cleanups that run several calls.
func errorsJoin(errs ...error) error { return errors.Join(errs...) }
