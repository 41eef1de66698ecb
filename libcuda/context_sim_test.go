//go:build !gpu

package libcuda_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// WithContext's own failures name the call and match the Result; f's error
// comes back untouched.
func TestWithContextErrorsNameTheCall(t *testing.T) {
	ctx := testenv.PrimaryContext(t, 0)
	// Run on a thread with no context current, so that WithContext sets
	// one (and restores none) whichever thread the test lands on.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var prev libcuda.Context
	testenv.Must(t, libcuda.CtxGetCurrent(&prev))
	testenv.Must(t, libcuda.CtxSetCurrent(0))
	defer testenv.RestoreCurrent(t, prev)

	for _, call := range []string{"cuCtxGetCurrent", "cuCtxSetCurrent"} {
		testenv.SimFailNext(t, call, 1, libcuda.CUDA_ERROR_UNKNOWN)
		ran := false
		err := libcuda.WithContext(ctx, func() error { ran = true; return nil })
		if !errors.Is(err, libcuda.CUDA_ERROR_UNKNOWN) || !strings.HasPrefix(err.Error(), call+": ") {
			t.Errorf("%s failing: WithContext = %v, want %s: CUDA_ERROR_UNKNOWN", call, err, call)
		}
		if ran {
			t.Errorf("%s failing: f ran", call)
		}
	}
	err := libcuda.WithContext(ctx, func() error { return libcuda.CUDA_ERROR_NOT_READY })
	if err != libcuda.CUDA_ERROR_NOT_READY {
		t.Errorf("f's own error came back as %#v, want the bare Result", err)
	}
}
