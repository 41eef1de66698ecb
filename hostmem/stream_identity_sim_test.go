//go:build !gpu

package hostmem_test

import (
	"testing"
	"time"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
	"github.com/purecuda/purecuda/libcuda"
)

// TestAReusedStreamHandleIsANewStream: the driver gives a destroyed
// stream's handle to a new stream (TestConformanceDestroyedHandlesComeBack),
// here one of another context. A buffer used on the old stream and then on
// the new one must record the new use with an event of the new stream's
// context and wait for the new stream's work: state keyed by the handle
// (the buffer's uses, the cache of stream contexts) would take the new
// stream for the old one, and cuEventRecord refuses an event of another
// context.
//
// Simulator only: its streams of every context share one free list, so
// the handle comes back at once; the driver's allocator is not known to
// give a handle to another context's stream.
func TestAReusedStreamHandleIsANewStream(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	memtest.Drain(t)
	data := make([]byte, 8192)
	buf, err := hostmem.Wrap(cu, data)
	testenv.Must(t, err)
	freed := false
	t.Cleanup(func() {
		if !freed {
			testenv.MustBounded(t, "buf.Free", buf.Free)
		}
	})

	var a libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&a, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	testenv.Must(t, libcuda.MemsetD8Async(buf.DevicePtr(), 1, 8192, a))
	testenv.Must(t, buf.Use(a))
	testenv.Must(t, libcuda.StreamSynchronize(a))
	testenv.Must(t, libcuda.StreamDestroy(a))

	// A stream of another context on the same device gets a's handle.
	var dev libcuda.Device
	testenv.Must(t, libcuda.CtxGetDevice(&dev))
	var other libcuda.Context
	testenv.Must(t, libcuda.CtxCreate(&other, nil, 0, dev))
	t.Cleanup(func() { testenv.Must(t, libcuda.CtxDestroy(other)) })
	g := testenv.NewGate(t) // allocated in other: portable, device-mapped
	var b libcuda.Stream
	var extra []libcuda.Stream
	t.Cleanup(func() {
		for _, s := range extra {
			testenv.Must(t, libcuda.StreamDestroy(s))
		}
	})
	// a's handle serves the next stream at once (its worker may still run
	// the old queue); the loop only guards against a change of that.
	for range 10_000 {
		testenv.Must(t, libcuda.StreamCreate(&b, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
		if b == a {
			break
		}
		extra = append(extra, b)
		time.Sleep(time.Millisecond)
	}
	if b != a {
		t.Fatalf("no stream of another context got the destroyed stream's handle %#x in 10,000 creations", uintptr(a))
	}
	t.Cleanup(func() { testenv.Must(t, libcuda.StreamDestroy(b)) })
	testenv.Must(t, libcuda.CtxSetCurrent(cu))

	// The new stream's work is held; the buffer is used on it and freed.
	g.Hold(t, b)
	testenv.Must(t, libcuda.MemsetD8Async(buf.DevicePtr(), 2, 8192, b))
	if err := buf.Use(b); err != nil {
		t.Fatalf("Use on a new stream (another context's) that has the old stream's handle: %v", err)
	}
	testenv.MustBounded(t, "buf.Free", buf.Free)
	freed = true
	memtest.StillHeld(t)
	g.Open()
	testenv.Eventually(t, "the release after the new stream's work", func() bool { return hostmem.ReadStats().Pending == 0 })
	if data[0] != 2 || data[len(data)-1] != 2 {
		t.Fatalf("the new stream's work did not run on the buffer: %d %d", data[0], data[len(data)-1])
	}
	memtest.Drain(t)
}
