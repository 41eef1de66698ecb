package hostmem_test

import (
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
	"github.com/purecuda/purecuda/libcuda"
)

// A buffer used on a stream that is destroyed while that use's work is
// still held, whose handle the next stream created gets at once (the
// driver does so: TestConformanceDestroyedStreamsHandleComesBackWhileItsWorkIsPending),
// waits for the old stream's work and for nothing of the new stream's: its
// release ends when the old work does, while the new stream is still held.
// A release keyed by the handle would wait for the new stream (or take the
// new stream's idle moment for the old work's end).
func TestAUseOnADestroyedStreamWaitsForItsOwnWorkOnly(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	memtest.Drain(t)
	oldGate, newGate := testenv.NewGate(t), testenv.NewGate(t)
	data := make([]byte, 8192)
	buf, err := hostmem.Wrap(cu, data)
	testenv.Must(t, err)

	var old libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&old, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	oldGate.Hold(t, old)
	testenv.Must(t, libcuda.MemsetD8Async(buf.DevicePtr(), 1, uint64(len(data)), old))
	testenv.Must(t, buf.Use(old))
	testenv.Must(t, libcuda.StreamDestroy(old))

	var s libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.StreamDestroy(s)) })
	if s != old {
		t.Fatalf("the stream created next got handle %#x, not the destroyed stream's %#x: nothing to test", uintptr(s), uintptr(old))
	}
	newGate.Hold(t, s)
	testenv.MustBounded(t, "buf.Free", buf.Free)
	memtest.StillHeld(t)

	oldGate.Open()
	testenv.Eventually(t, "the release once the old stream's work has ended", func() bool { return hostmem.ReadStats().Pending == 0 })
	if data[0] != 1 || data[len(data)-1] != 1 {
		t.Fatalf("the old stream's memset did not run before the release: %d %d", data[0], data[len(data)-1])
	}
	if got := libcuda.StreamQuery(s); got != libcuda.CUDA_ERROR_NOT_READY {
		t.Fatalf("cuStreamQuery of the new stream = %v; want it still held", got)
	}
	newGate.Open()
	memtest.Drain(t)
}
