package tests

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// TestConformanceFaultLosesTheDeviceForTheProcess checks the driver fact
// behind cuda.ErrContextLost (DESIGN.md, driver facts): after a kernel
// writes out of bounds, the faulting stream's wait returns a sticky
// Result, and so does every later call in the context (queries of another,
// idle stream and of an event that completed before the fault, an
// allocation, a launch, waits, an unregister, a stream creation, a copy,
// an event record, making the context current: the simulator's rule),
// while cuCtxGetCurrent still succeeds; cuDevicePrimaryCtxReset succeeds
// and the next cuDevicePrimaryCtxRetain fails with the same Result. In a
// child process: the device is lost for the process.
func TestConformanceFaultLosesTheDeviceForTheProcess(t *testing.T) {
	if !testenv.InChild(t) {
		return
	}
	// Nothing made here is destroyed: the calls would fail, and the
	// process ends.
	f := testenv.NewFault(t)
	dev, cu, idle, faulting, buf, fill := f.Dev, f.Ctx, f.Stream, f.Bad, f.Mem, f.Fill
	host := hostBuffer(t, 4096)
	testenv.Must(t, libcuda.MemHostRegister(host, 4096, 0))
	var done libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&done, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	testenv.Must(t, libcuda.EventRecord(done, idle))
	testenv.Must(t, libcuda.StreamSynchronize(idle))

	f.Launch(t) // 2^40 ints from buf's 1024, on faulting
	first := libcuda.StreamSynchronize(faulting)
	if !errors.Is(first, libcuda.ErrContextLost) {
		t.Fatalf("cuStreamSynchronize of the faulting stream = %v, want a sticky error (ErrContextLost)", first)
	}
	t.Logf("the faulting stream's wait: %v", first)
	var newStream libcuda.Stream
	var p libcuda.Deviceptr
	word := make([]byte, 4)
	calls := []struct {
		name string
		call func() error
	}{
		{"cuStreamQuery(another, idle stream)", func() error { return libcuda.StreamQuery(idle) }},
		{"cuEventQuery(an event done before the fault)", func() error { return libcuda.EventQuery(done) }},
		{"cuEventSynchronize(that event)", func() error { return libcuda.EventSynchronize(done) }},
		{"cuMemAlloc", func() error { return libcuda.MemAlloc(&p, 256) }},
		{"cuLaunchKernel(another stream)", func() error {
			return fill.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 32}, 0, idle, buf, uint64(32), int32(2))
		}},
		{"cuStreamSynchronize(another stream)", func() error { return libcuda.StreamSynchronize(idle) }},
		{"cuCtxSynchronize", libcuda.CtxSynchronize},
		{"cuMemcpyHtoD", func() error { return libcuda.MemcpyHtoD(buf, unsafe.Pointer(&word[0]), 4) }},
		{"cuMemHostUnregister", func() error { return libcuda.MemHostUnregister(host) }},
		{"cuStreamCreate", func() error { return libcuda.StreamCreate(&newStream, 0) }},
		{"cuEventRecord(another stream)", func() error { return libcuda.EventRecord(done, idle) }},
	}
	for _, c := range calls {
		if err := c.call(); code(err) != code(first) {
			t.Errorf("%s after the fault = %v, want %v", c.name, err, first)
		}
	}
	// Measured on the H200: the lost context is still made current.
	if err := libcuda.CtxSetCurrent(cu); err != nil {
		t.Errorf("cuCtxSetCurrent(the context) after the fault = %v, want success", err)
	}
	var cur libcuda.Context
	if err := libcuda.CtxGetCurrent(&cur); err != nil || cur != cu {
		t.Errorf("cuCtxGetCurrent after the fault = %v, context %#x, want success and %#x", err, cur, cu)
	}
	rel := libcuda.DevicePrimaryCtxRelease(dev)
	t.Logf("cuDevicePrimaryCtxRelease after the fault: %v", rel)
	if err := libcuda.DevicePrimaryCtxReset(dev); err != nil {
		t.Errorf("cuDevicePrimaryCtxReset after the fault = %v, want success", err)
	}
	var again libcuda.Context
	if err := libcuda.DevicePrimaryCtxRetain(&again, dev); code(err) != code(first) {
		t.Errorf("cuDevicePrimaryCtxRetain after the reset = %v, want %v: the device is lost for the process", err, first)
	}
}
