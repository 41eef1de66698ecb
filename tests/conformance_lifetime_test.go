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

// TestConformanceDestroyedContextsRegistrationsAreDropped checks what
// hostmem's registry rests on when a context made with cuCtxCreate is
// destroyed with host memory still registered in it: the driver drops the
// registration with the context (portable and device-mapped, as hostmem
// registers), so the same memory registers again in another context (not
// CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) and unregisters there.
func TestConformanceDestroyedContextsRegistrationsAreDropped(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	p := hostBuffer(t, 8192)
	flags := uint32(libcuda.CU_MEMHOSTREGISTER_PORTABLE | libcuda.CU_MEMHOSTREGISTER_DEVICEMAP)
	var dev libcuda.Device
	testenv.Must(t, libcuda.CtxGetDevice(&dev))
	var other libcuda.Context
	testenv.Must(t, libcuda.CtxCreate(&other, nil, 0, dev)) // current now
	testenv.Must(t, libcuda.MemHostRegister(p, 8192, flags))
	testenv.Must(t, libcuda.CtxDestroy(other))
	testenv.Must(t, libcuda.CtxSetCurrent(cu))
	if got := code(libcuda.MemHostRegister(p, 8192, flags)); got != 0 {
		t.Fatalf("cuMemHostRegister of memory registered in a context destroyed since = %d, want 0 (the registration went with its context)", got)
	}
	if got := code(libcuda.MemHostUnregister(p)); got != 0 {
		t.Errorf("cuMemHostUnregister of the new registration = %d, want 0", got)
	}
}
