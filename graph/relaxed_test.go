package graph_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/libcuda"
)

func TestRelaxedRestoresTheModeAlsoAfterAPanic(t *testing.T) {
	onPrimary(t, 0)
	exchange := func(m libcuda.StreamCaptureMode) libcuda.StreamCaptureMode {
		t.Helper()
		must(t, libcuda.ThreadExchangeStreamCaptureMode(&m))
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
	noErrorsLogged(t)
	onPrimary(t, 0)
	other := newStream(t)
	var e libcuda.Event
	must(t, libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	defer func() { must(t, libcuda.EventDestroy(e)) }()
	must(t, libcuda.EventRecord(e, other))
	end := blockedCapture(t, newStream(t))
	err := graph.Relaxed(func() error {
		var d libcuda.Deviceptr
		if err := libcuda.MemAlloc(&d, 4096); err != nil {
			return err
		}
		return errors.Join(libcuda.MemFree(d), libcuda.EventSynchronize(e), libcuda.StreamQuery(other))
	})
	must(t, errors.Join(err, end()))
}
