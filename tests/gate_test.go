package tests

import (
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
)

// gate holds streams until the test opens it: a word of pinned, mapped host
// memory that cuStreamWaitValue32 waits on. It is the deterministic way to
// keep a stream busy, on the simulator and on the GPU.
type gate struct {
	host unsafe.Pointer
	dev  libcuda.Deviceptr
}

// newGate allocates a gate; the calling thread must have a context current.
// The gate is opened and freed when the test ends.
func newGate(t testing.TB) *gate {
	t.Helper()
	g := &gate{}
	must(t, libcuda.MemHostAlloc(&g.host, 64, uint32(libcuda.CU_MEMHOSTALLOC_DEVICEMAP|libcuda.CU_MEMHOSTALLOC_PORTABLE)))
	atomic.StoreUint32((*uint32)(g.host), 0)
	must(t, libcuda.MemHostGetDevicePointer(&g.dev, g.host, 0))
	t.Cleanup(func() {
		g.open()
		if err := libcuda.MemFreeHost(g.host); err != nil {
			t.Errorf("cuMemFreeHost: %v", err)
		}
	})
	return g
}

// hold makes s wait until the gate opens. If the test fails meanwhile, the
// gate opens before the cleanups registered so far run (they may wait for
// s, as cuMemFree does).
func (g *gate) hold(t testing.TB, s libcuda.Stream) {
	t.Helper()
	must(t, libcuda.StreamWaitValue32(s, g.dev, 1, uint32(libcuda.CU_STREAM_WAIT_VALUE_GEQ)))
	t.Cleanup(g.open)
}

func (g *gate) open() { atomic.StoreUint32((*uint32)(g.host), 1) }

// newStream creates a non-blocking stream destroyed when the test ends.
func newStream(t testing.TB) libcuda.Stream {
	t.Helper()
	var s libcuda.Stream
	must(t, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	t.Cleanup(func() {
		if err := libcuda.StreamDestroy(s); err != nil {
			t.Errorf("cuStreamDestroy: %v", err)
		}
	})
	return s
}
