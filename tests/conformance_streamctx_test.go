package tests

import (
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// TestConformanceStreamWorkRunsInTheStreamsContext extends
// TestConformanceLaunchRunsInTheStreamsContext to the other calls of a
// Jacobi sweep and of simpleCudaGraphs' timed loop (issue 44): with no
// context current, and with another context current, on the calling
// thread, a memset, a device-to-host copy, an event record, the capture of
// those and a kernel launch, the update of an executable graph, the
// graph's destruction and the launch of the executable graph on a
// non-NULL stream all succeed and do their work in the stream's context.
// Package cuda still makes the context current for all but the kernel
// launch (the driver does not document this); where this holds on the GPU,
// RunCached, LaunchGraph, Zero, the copies and RecordEvent could drop
// their cuCtxGetCurrent.
func TestConformanceStreamWorkRunsInTheStreamsContext(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	fill := testenv.Kernel(t, testenv.LoadKernels(t), "fill_i32")
	s := testenv.NewStream(t)
	const n = 64
	var buf libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&buf, n*4))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemFree(buf)) })
	var hostp unsafe.Pointer
	testenv.Must(t, libcuda.MemHostAlloc(&hostp, n*4, 0))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemFreeHost(hostp)) })
	host := unsafe.Slice((*int32)(hostp), n)
	var ev libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&ev, 0))
	t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(ev)) })
	// The executable graph to update and launch, made with cu current.
	capture := func(value int32) (libcuda.Graph, error) {
		if err := libcuda.StreamBeginCapture(s, libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL); err != nil {
			return 0, err
		}
		var g libcuda.Graph
		err := libcuda.MemsetD32Async(buf, 0, n, s)
		if err == nil {
			err = fill.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: n}, 0, s, buf, uint64(n), value)
		}
		if err == nil {
			err = libcuda.MemcpyDtoHAsync(hostp, buf, n*4, s)
		}
		if eerr := libcuda.StreamEndCapture(s, &g); err == nil {
			err = eerr
		}
		return g, err
	}
	g, err := capture(1)
	testenv.Must(t, err)
	var e libcuda.GraphExec
	testenv.Must(t, libcuda.GraphInstantiateWithFlags(&e, g, 0))
	testenv.Must(t, libcuda.GraphDestroy(g))
	t.Cleanup(func() { testenv.Must(t, libcuda.GraphExecDestroy(e)) })

	var dev libcuda.Device
	testenv.Must(t, libcuda.CtxGetDevice(&dev))
	var other libcuda.Context
	testenv.Must(t, libcuda.CtxCreate(&other, nil, 0, dev))
	t.Cleanup(func() { testenv.Must(t, libcuda.CtxDestroy(other)) })
	testenv.Must(t, libcuda.CtxSetCurrent(cu))
	check := func(what string, want int32) {
		t.Helper()
		for i, v := range host {
			if v != want {
				t.Errorf("%s: element %d is %d, want %d", what, i, v, want)
				return
			}
		}
	}
	for i, c := range []struct {
		name    string
		current libcuda.Context
	}{{"no context current", 0}, {"another context current", other}} {
		value := int32(10 * (i + 1))
		clear(host)
		testenv.Must(t, libcuda.CtxSetCurrent(c.current))
		// Stream work, one call at a time.
		errs := map[string]error{}
		errs["cuMemsetD32Async"] = libcuda.MemsetD32Async(buf, uint32(value), n, s)
		errs["cuMemcpyDtoHAsync"] = libcuda.MemcpyDtoHAsync(hostp, buf, n*4, s)
		errs["cuEventRecord"] = libcuda.EventRecord(ev, s)
		testenv.Must(t, libcuda.CtxSetCurrent(cu))
		testenv.Must(t, libcuda.StreamSynchronize(s))
		for call, err := range errs {
			if err != nil {
				t.Errorf("%s: %s on the stream: %v, want success", c.name, call, err)
			}
		}
		check(c.name+": memset and copy", value)
		if err := libcuda.EventQuery(ev); err != nil {
			t.Errorf("%s: the event recorded on the stream: query %v, want complete", c.name, err)
		}
		// A sweep: capture, update in place, destroy, launch.
		clear(host)
		testenv.Must(t, libcuda.CtxSetCurrent(c.current))
		g, cerr := capture(value + 1)
		var uerr, derr, lerr error
		if cerr == nil {
			var info libcuda.GraphExecUpdateResultInfo
			uerr = libcuda.GraphExecUpdate(e, g, &info)
			derr = libcuda.GraphDestroy(g)
			lerr = libcuda.GraphLaunch(e, s)
		}
		testenv.Must(t, libcuda.CtxSetCurrent(cu))
		if cerr != nil || uerr != nil || derr != nil || lerr != nil {
			t.Errorf("%s: capture %v, cuGraphExecUpdate %v, cuGraphDestroy %v, cuGraphLaunch %v; want all to succeed", c.name, cerr, uerr, derr, lerr)
			continue
		}
		testenv.Must(t, libcuda.StreamSynchronize(s))
		check(c.name+": the updated graph's launch", value+1)
	}
}
