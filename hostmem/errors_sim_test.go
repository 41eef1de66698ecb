//go:build !gpu

package hostmem_test

import (
	"errors"
	"regexp"
	"testing"

	"github.com/purecuda/purecuda/hostmem"
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
// registration of the memory, and a use's queries, event and record.
func TestDriverErrorsNameTheCall(t *testing.T) {
	noErrorsLogged(t)
	primary := onPrimary(t, 0)
	drain(t)
	var dev libcuda.Device
	must(t, libcuda.DeviceGet(&dev, 0))
	fail := func(call string) { simFailNext(t, call, 1, injected) }

	t.Run("a new context", func(t *testing.T) {
		for _, call := range []string{"cuCtxGetId", "cuCtxGetCurrent", "cuCtxSetCurrent", "cuCtxGetDevice",
			"cuDeviceGetAttribute", "cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease"} {
			// A context hostmem has not seen, not current on this thread.
			var cu libcuda.Context
			must(t, libcuda.CtxCreate(&cu, nil, 0, dev))
			must(t, libcuda.CtxSetCurrent(primary))
			fail(call)
			b, err := hostmem.Wrap(cu, make([]byte, 4096))
			if b != nil {
				must(t, b.Free())
			}
			namesCall(t, "Wrap in a new context", call, err)
			if call == "cuDevicePrimaryCtxRelease" { // the retain before it stays: undo it
				must(t, libcuda.DevicePrimaryCtxRelease(dev))
			}
			drain(t)
			must(t, libcuda.CtxDestroy(cu))
		}
	})
	t.Run("memory", func(t *testing.T) {
		fail("cuMemHostAlloc")
		_, err := hostmem.Alloc(primary, 4096)
		namesCall(t, "Alloc", "cuMemHostAlloc", err)
		fail("cuMemHostRegister")
		_, err = hostmem.Wrap(primary, make([]byte, 4096))
		namesCall(t, "Wrap", "cuMemHostRegister", err)
		drain(t)
	})
	t.Run("Use", func(t *testing.T) {
		b, err := hostmem.Wrap(primary, make([]byte, 4096))
		must(t, err)
		for _, call := range []string{"cuStreamIsCapturing", "cuStreamGetId", "cuStreamGetCtx", "cuEventCreate", "cuEventRecord"} {
			must(t, hostmem.Drain(t.Context())) // no event kept for reuse: a use creates one
			fail(call)
			namesCall(t, "Use", call, b.Use(newStream(t))) // a stream not seen before
		}
		fail("cuCtxGetCurrent")
		namesCall(t, "Use of the per-thread stream", "cuCtxGetCurrent", b.Use(libcuda.CU_STREAM_PER_THREAD))
		must(t, b.Free())
		drain(t)
	})
}
