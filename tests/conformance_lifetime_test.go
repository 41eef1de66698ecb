package tests

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// The conformance cases of what outlives a handle: a destroyed stream's
// work, and a destroyed context's registrations.

// TestConformanceDestroyedStreamsHandleComesBackWhileItsWorkIsPending
// checks the fact of DESIGN.md that state keyed by a stream handle must not
// survive: the next stream created gets a destroyed stream's handle at
// once, while the destroyed stream's work is still held. The new stream is
// a stream of its own (idle, another id); the old work still completes,
// and an event recorded behind it says so.
func TestConformanceDestroyedStreamsHandleComesBackWhileItsWorkIsPending(t *testing.T) {
	testenv.OnPrimary(t, 0)
	g := testenv.NewGate(t)
	var old libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&old, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	var oldID uint64
	testenv.Must(t, libcuda.StreamGetId(old, &oldID))
	var e libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(e)) })
	g.Hold(t, old)
	testenv.Must(t, libcuda.EventRecord(e, old))
	testenv.Must(t, libcuda.StreamDestroy(old))

	var s libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.StreamDestroy(s)) })
	if s != old {
		t.Errorf("the stream created next got handle %#x, not the destroyed stream's %#x", uintptr(s), uintptr(old))
	}
	var id uint64
	testenv.Must(t, libcuda.StreamGetId(s, &id))
	if id == oldID {
		t.Errorf("the new stream has the destroyed stream's id %d", id)
	}
	if got := code(libcuda.StreamQuery(s)); got != 0 {
		t.Errorf("cuStreamQuery of the new stream, while the old one's work is held = %d, want 0 (idle)", got)
	}
	if got := code(libcuda.EventQuery(e)); got != 600 {
		t.Errorf("cuEventQuery behind the destroyed stream's held work = %d, want 600", got)
	}
	g.Open()
	testenv.Must(t, libcuda.EventSynchronize(e))
}
