// Package testenv sets up the driver for the tests of every package: the
// simulator (internal/testenv/sim/sim.c, built once per source with the system C compiler)
// in a plain `go test`, the real driver under `-tags gpu`.
//
// A package's tests call Main from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// Without a C compiler the simulator cannot be built: Main says so once and
// exits 0 before any test or example runs (an example cannot skip), unless
// PURECUDA_REQUIRE_SIM=1, as in CI, which makes it a failure. Under -tags gpu
// a missing driver is always a failure.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv/harness"
	"github.com/purecuda/purecuda/libcuda"
)

// Timeout bounds every wait in a test: a test that waits longer has failed.
const Timeout = 10 * time.Second

// EnvRequireSim, set to 1, turns a simulator that cannot be built into a
// failure of the test binary.
const EnvRequireSim = "PURECUDA_REQUIRE_SIM"

// Main loads the simulator or the driver, runs the tests and exits. Around
// the tests it runs package harness: a watchdog that ends a hung binary
// after harness.DefaultWatchdog with every goroutine's stack
// ($PURECUDA_TEST_WATCHDOG sets the limit), and, after them, the drains
// given (Drain) and the leak check, which fails the binary when the
// simulator still counts a live stream, event, allocation (device or
// host), graph, executable graph, module, registered range or capture, or
// a stand-in its objects (cuBLAS handles, NVML event sets): the message
// names each with its count. A package that leaves some on purpose says so
// with Allow.
//
//	func TestMain(m *testing.M) { testenv.Main(m, testenv.Drain(hostmem.Drain)) }
func Main(m *testing.M, opts ...Option) { mainWith(m, nil, opts) }

// Option adds to what Main does around the tests.
type Option func(*options)

type options struct {
	drains []func(context.Context) error
}

// Drain makes Main run f after the tests and before the leak check, with
// a context that ends after harness.DrainTimeout: for the releases that a
// package finishes in the background (hostmem.Drain). An error of f fails
// the binary. (testenv cannot call hostmem itself: hostmem's tests import
// testenv.)
func Drain(f func(context.Context) error) Option {
	return func(o *options) { o.drains = append(o.drains, f) }
}

// Allow sets the leak check's baseline of what (the name the check prints,
// e.g. "streams"): the package's tests leave n on purpose, for the reason
// why. A count above n still fails. See harness.Allow.
func Allow(what string, n int64, why string) Option {
	return func(*options) { harness.Allow(what, n, why) }
}

// mainWith is Main with more set up (more, if not nil) after the driver
// or simulator, failing as the simulator's build does.
func mainWith(m *testing.M, more func() error, opts []Option) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	err := setup()
	if err == nil && more != nil {
		err = more()
	}
	if err != nil {
		switch {
		case OnGPU:
			fmt.Fprintf(os.Stderr, "-tags gpu needs the CUDA driver: %v\n", err)
			os.Exit(1)
		case os.Getenv(EnvRequireSim) == "1":
			fmt.Fprintf(os.Stderr, "simulator not built: %v (%s=1 makes this a failure)\n", err, EnvRequireSim)
			os.Exit(1)
		default:
			fmt.Fprintf(os.Stderr, "simulator not built: %v; install gcc to run these tests\n", err)
			os.Exit(0)
		}
	}
	if err := libcuda.Init(0); err != nil {
		fmt.Fprintf(os.Stderr, "cuInit: %v\n", err)
		os.Exit(1)
	}
	os.Exit(harness.Run(m, func(ctx context.Context) error {
		for _, f := range o.drains {
			if err := f(ctx); err != nil {
				return err
			}
		}
		return nil
	}))
}

// PrimaryContext retains device ordinal's primary context for the test and
// releases it when the test ends.
func PrimaryContext(t testing.TB, ordinal int) libcuda.Context {
	t.Helper()
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

// OnPrimary retains device ordinal's primary context for the test and makes
// it current on the test goroutine's locked thread until the test ends.
func OnPrimary(t testing.TB, ordinal int) libcuda.Context {
	t.Helper()
	cu := PrimaryContext(t, ordinal)
	OnThread(t, cu)
	return cu
}

// OnThread locks the test goroutine to its OS thread with ctx current for
// the rest of the test.
func OnThread(t testing.TB, ctx libcuda.Context) {
	t.Helper()
	runtime.LockOSThread()
	var prev libcuda.Context
	Must(t, libcuda.CtxGetCurrent(&prev))
	Must(t, libcuda.CtxSetCurrent(ctx))
	t.Cleanup(func() {
		RestoreCurrent(t, prev)
		runtime.UnlockOSThread()
	})
}

// RestoreCurrent makes prev the calling thread's context again. A thread
// that Go's scheduler hands a test may have had a context current that
// another test has destroyed since; such a thread is left with none.
func RestoreCurrent(t testing.TB, prev libcuda.Context) {
	t.Helper()
	err := libcuda.CtxSetCurrent(prev)
	if errors.Is(err, libcuda.CUDA_ERROR_INVALID_CONTEXT) || errors.Is(err, libcuda.CUDA_ERROR_CONTEXT_IS_DESTROYED) {
		err = libcuda.CtxSetCurrent(0)
	}
	Must(t, err)
}

// Must fails t at once when err is not nil.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
