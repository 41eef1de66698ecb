//go:build !gpu

package hostmem_test

import (
	"testing"
	"time"

	"github.com/purecuda/purecuda/hostmem"
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
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	drain(t)
	data := make([]byte, 8192)
	buf, err := hostmem.Wrap(cu, data)
	must(t, err)
	freed := false
	t.Cleanup(func() {
		if !freed {
			must(t, buf.Free())
		}
	})

	var a libcuda.Stream
	must(t, libcuda.StreamCreate(&a, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	must(t, libcuda.MemsetD8Async(buf.DevicePtr(), 1, 8192, a))
	must(t, buf.Use(a))
	must(t, libcuda.StreamSynchronize(a))
	must(t, libcuda.StreamDestroy(a))

	// A stream of another context on the same device gets a's handle.
	var dev libcuda.Device
	must(t, libcuda.CtxGetDevice(&dev))
	var other libcuda.Context
	must(t, libcuda.CtxCreate(&other, nil, 0, dev))
	t.Cleanup(func() { must(t, libcuda.CtxDestroy(other)) })
	g := newGate(t) // allocated in other: portable, device-mapped
	var b libcuda.Stream
	var extra []libcuda.Stream
	t.Cleanup(func() {
		for _, s := range extra {
			must(t, libcuda.StreamDestroy(s))
		}
	})
	// a's struct serves again once its worker has ended, which a loaded
	// machine may delay: a moment between tries.
	for range 10_000 {
		must(t, libcuda.StreamCreate(&b, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
		if b == a {
			break
		}
		extra = append(extra, b)
		time.Sleep(time.Millisecond)
	}
	if b != a {
		t.Fatalf("no stream of another context got the destroyed stream's handle %#x in 10,000 creations", uintptr(a))
	}
	t.Cleanup(func() { must(t, libcuda.StreamDestroy(b)) })
	must(t, libcuda.CtxSetCurrent(cu))

	// The new stream's work is held; the buffer is used on it and freed.
	g.hold(t, b)
	must(t, libcuda.MemsetD8Async(buf.DevicePtr(), 2, 8192, b))
	if err := buf.Use(b); err != nil {
		t.Fatalf("Use on a new stream (another context's) that has the old stream's handle: %v", err)
	}
	must(t, buf.Free())
	freed = true
	stillHeld(t)
	g.open()
	waitFor(t, "the release after the new stream's work", func() bool { return hostmem.ReadStats().Pending == 0 })
	if data[0] != 2 || data[len(data)-1] != 2 {
		t.Fatalf("the new stream's work did not run on the buffer: %d %d", data[0], data[len(data)-1])
	}
	drain(t)
}
