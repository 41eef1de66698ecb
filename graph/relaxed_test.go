package graph_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

func TestRelaxedRestoresTheModeAlsoAfterAPanic(t *testing.T) {
	testenv.OnPrimary(t, 0)
	exchange := func(m libcuda.StreamCaptureMode) libcuda.StreamCaptureMode {
		t.Helper()
		testenv.Must(t, libcuda.ThreadExchangeStreamCaptureMode(&m))
		return m
	}
	exchange(libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
	defer exchange(libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL)
	current := func() libcuda.StreamCaptureMode {
		m := exchange(libcuda.CU_STREAM_CAPTURE_MODE_RELAXED)
		exchange(m)
		return m
	}

	boom := errors.New("boom")
	var inside libcuda.StreamCaptureMode
	if err := graph.Relaxed(func() error { inside = current(); return boom }); !errors.Is(err, boom) {
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
		_ = graph.Relaxed(func() error { panic("in relaxed") })
	}()
	if m := current(); m != libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL {
		t.Fatalf("the mode after a panic in Relaxed is %v, want thread-local", m)
	}
}

func TestRelaxedCallsDoNotInvalidateAnotherGoroutinesGlobalCapture(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	other := testenv.NewStream(t)
	var e libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	defer func() { testenv.Must(t, libcuda.EventDestroy(e)) }()
	testenv.Must(t, libcuda.EventRecord(e, other))
	end := blockedCapture(t, testenv.NewStream(t))
	err := graph.Relaxed(func() error {
		var d libcuda.Deviceptr
		if err := libcuda.MemAlloc(&d, 4096); err != nil {
			return err
		}
		return errors.Join(libcuda.MemFree(d), libcuda.EventSynchronize(e), libcuda.StreamQuery(other))
	})
	testenv.Must(t, errors.Join(err, end()))
}
