package sync_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// threadMode sets the locked test thread's capture mode to m for the rest
// of the test and returns a function that reads the thread's mode.
func threadMode(t *testing.T, m libcuda.StreamCaptureMode) func() libcuda.StreamCaptureMode {
	t.Helper()
	exchange := func(m libcuda.StreamCaptureMode) libcuda.StreamCaptureMode {
		t.Helper()
		testenv.Must(t, libcuda.ThreadExchangeStreamCaptureMode(&m))
		return m
	}
	old := exchange(m)
	t.Cleanup(func() { exchange(old) })
	return func() libcuda.StreamCaptureMode {
		m := exchange(libcuda.CU_STREAM_CAPTURE_MODE_RELAXED)
		exchange(m)
		return m
	}
}

func TestRelaxedRestoresTheModeAlsoAfterAPanic(t *testing.T) {
	testenv.OnPrimary(t, 0)
	current := threadMode(t, libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)

	boom := errors.New("boom")
	var inside libcuda.StreamCaptureMode
	if err := sync.Relaxed(func() error { inside = current(); return boom }); !errors.Is(err, boom) {
		t.Fatalf("Relaxed = %v, want the function's error", err)
	}
	if inside != libcuda.CU_STREAM_CAPTURE_MODE_RELAXED {
		t.Fatalf("the mode inside Relaxed was %v", inside)
	}
	if m := current(); m != libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL {
		t.Fatalf("the mode after Relaxed is %v, want thread-local", m)
	}
	func() {
		defer func() {
			if r := recover(); r != "in relaxed" {
				t.Fatalf("recovered %v, want the function's panic", r)
			}
		}()
		_ = sync.Relaxed(func() error { panic("in relaxed") })
	}()
	if m := current(); m != libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL {
		t.Fatalf("the mode after a panic in Relaxed is %v, want thread-local", m)
	}
}

// CaptureSafe runs its function in the thread's own mode while no capture
// is registered, in relaxed mode while one is, and returns its error.
func TestCaptureSafeSwitchesToRelaxedOnlyDuringACapture(t *testing.T) {
	testenv.OnPrimary(t, 0)
	current := threadMode(t, libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		capture bool
		want    libcuda.StreamCaptureMode
	}{
		{"no capture", false, libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL},
		{"during a capture", true, libcuda.CU_STREAM_CAPTURE_MODE_RELAXED},
	} {
		func() { // on this goroutine, locked to the thread whose mode is set
			if tc.capture {
				defer sync.StartCapture().End()
			}
			var inside libcuda.StreamCaptureMode
			if err := sync.CaptureSafe(func() error { inside = current(); return boom }); !errors.Is(err, boom) {
				t.Fatalf("%s: CaptureSafe = %v, want the function's error", tc.name, err)
			}
			if inside != tc.want {
				t.Errorf("%s: the mode inside CaptureSafe was %v, want %v", tc.name, inside, tc.want)
			}
			if m := current(); m != libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL {
				t.Errorf("%s: the mode after CaptureSafe is %v, want thread-local", tc.name, m)
			}
		}()
	}
}

// CaptureSafeIn makes the context current for its function, in either
// case, and the thread's own context current again after.
func TestCaptureSafeInRunsInTheContextAndRestoresTheThreads(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	testenv.Must(t, libcuda.CtxSetCurrent(0))
	defer func() { testenv.Must(t, libcuda.CtxSetCurrent(cu)) }()
	for _, capture := range []bool{false, true} {
		func() {
			if capture {
				defer sync.StartCapture().End()
			}
			var inside libcuda.Context
			testenv.Must(t, sync.CaptureSafeIn(cu, func() error { return libcuda.CtxGetCurrent(&inside) }))
			if inside != cu {
				t.Errorf("capture %v: the context inside CaptureSafeIn was %#x, want %#x", capture, inside, cu)
			}
			var after libcuda.Context
			testenv.Must(t, libcuda.CtxGetCurrent(&after))
			if after != 0 {
				t.Errorf("capture %v: the context after CaptureSafeIn is %#x, want none", capture, after)
			}
		}()
	}
}
