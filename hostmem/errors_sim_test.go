//go:build !gpu

package hostmem_test

import (
	"errors"
	"regexp"
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
	"github.com/purecuda/purecuda/libcuda"
)

// injected is the failure the tests below inject: a code no call of
// theirs returns otherwise.
const injected = libcuda.CUDA_ERROR_NOT_PERMITTED

// namesCall fails t unless err matches the injected Result (errors.Is)
// and its text names the driver call that returned it: "cuX: " or
// "cuX(args): " right before the Result.
func namesCall(t *testing.T, what, call string, err error) {
	t.Helper()
	if !errors.Is(err, injected) {
		t.Errorf("%s with %s failing = %v, want an error matching %v", what, call, err, injected)
		return
	}
	re := regexp.MustCompile(regexp.QuoteMeta(call) + `(\([^)]*\))?: ` + regexp.QuoteMeta(injected.String()))
	if !re.MatchString(err.Error()) {
		t.Errorf("%s with %s failing = %q, want it to name %s right before the Result", what, call, err, call)
	}
}

// Every error that Wrap, Alloc and Use return from the driver names the
// call (issue 15), and matches the driver's Result: the device queries of
// a context seen for the first time, the switch to it, the allocation and
// registration of the memory, and a use's queries, event and record. All
// runs on the test's locked thread, the primary context current.
func TestDriverErrorsNameTheCall(t *testing.T) {
	testenv.NoErrorsLogged(t)
	primary := testenv.OnPrimary(t, 0)
	memtest.Drain(t)
	var dev libcuda.Device
	testenv.Must(t, libcuda.DeviceGet(&dev, 0))
	// failing runs f with call's next call failing, and disarms the
	// failure after, whether f reached the call or not.
	failing := func(call string, f func() error) error {
		testenv.SimFailNext(t, call, 1, injected)
		defer testenv.SimFailNext(t, call, 0, 0)
		return f()
	}

	// A context hostmem has not seen, not current on this thread.
	for _, call := range []string{"cuCtxGetId", "cuCtxGetCurrent", "cuCtxSetCurrent", "cuCtxGetDevice",
		"cuDeviceGetAttribute", "cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease"} {
		var cu libcuda.Context
		testenv.Must(t, libcuda.CtxCreate(&cu, nil, 0, dev))
		var popped libcuda.Context
		testenv.Must(t, libcuda.CtxPopCurrent(&popped)) // primary is current again
		err := failing(call, func() error {
			b, err := hostmem.Wrap(cu, make([]byte, 4096))
			if b != nil {
				testenv.MustBounded(t, "b.Free", b.Free)
			}
			return err
		})
		namesCall(t, "Wrap in a new context", call, err)
		if call == "cuDevicePrimaryCtxRelease" { // the retain before it stays: undo it
			testenv.Must(t, libcuda.DevicePrimaryCtxRelease(dev))
		}
		memtest.Drain(t)
		testenv.Must(t, libcuda.CtxDestroy(cu))
	}

	// The memory.
	namesCall(t, "Alloc", "cuMemHostAlloc", failing("cuMemHostAlloc", func() error {
		_, err := hostmem.Alloc(primary, 4096)
		return err
	}))
	namesCall(t, "Wrap", "cuMemHostRegister", failing("cuMemHostRegister", func() error {
		_, err := hostmem.Wrap(primary, make([]byte, 4096))
		return err
	}))
	memtest.Drain(t)

	// A use.
	b, err := hostmem.Wrap(primary, make([]byte, 4096))
	testenv.Must(t, err)
	for _, call := range []string{"cuStreamIsCapturing", "cuStreamGetId", "cuStreamGetCtx", "cuEventCreate", "cuEventRecord"} {
		testenv.Must(t, hostmem.Drain(testenv.Context(t))) // no event kept for reuse: a use creates one
		s := testenv.NewStream(t)                          // a stream not seen before
		namesCall(t, "Use", call, failing(call, func() error { return b.Use(s) }))
	}
	namesCall(t, "Use of the per-thread stream", "cuCtxGetCurrent", failing("cuCtxGetCurrent", func() error {
		return b.Use(libcuda.CU_STREAM_PER_THREAD)
	}))
	testenv.MustBounded(t, "b.Free", b.Free)
	memtest.Drain(t)
}
