package tests

import (
	"errors"
	"slices"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// The conformance cases of graph memory nodes (issue 43): what the
// simulator models of cuMemAllocAsync and cuMemFreeAsync under capture,
// checked against the driver by the -tags gpu run.

// captureGraph captures what f submits to s (relaxed mode) into a graph,
// destroyed when the test ends.
func captureGraph(t *testing.T, s libcuda.Stream, f func() error) libcuda.Graph {
	t.Helper()
	testenv.Must(t, libcuda.StreamBeginCapture(s, libcuda.CU_STREAM_CAPTURE_MODE_RELAXED))
	ferr := f()
	var g libcuda.Graph
	eerr := libcuda.StreamEndCapture(s, &g)
	if ferr != nil || eerr != nil {
		if g != 0 {
			testenv.Must(t, libcuda.GraphDestroy(g))
		}
		t.Fatalf("capture: %v, end: %v", ferr, eerr)
	}
	t.Cleanup(func() { testenv.Must(t, libcuda.GraphDestroy(g)) })
	return g
}

func nodeTypes(t *testing.T, g libcuda.Graph) []libcuda.GraphNodeType {
	t.Helper()
	var n uint64
	testenv.Must(t, libcuda.GraphGetNodes(g, nil, &n))
	nodes := make([]libcuda.GraphNode, n)
	if n > 0 {
		testenv.Must(t, libcuda.GraphGetNodes(g, &nodes[0], &n))
	}
	types := make([]libcuda.GraphNodeType, n)
	for i, x := range nodes[:n] {
		testenv.Must(t, libcuda.GraphNodeGetType(x, &types[i]))
	}
	slices.Sort(types)
	return types
}

// A captured cuMemAllocAsync and cuMemFreeAsync are a mem-alloc and a
// mem-free node; the address is given at the capture; the graph launches
// again and again.
func TestConformanceGraphAllocFreedInGraph(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	const n = 256
	var out libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&out, 4*n))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemFree(out)) })
	var p libcuda.Deviceptr
	g := captureGraph(t, s, func() error {
		if err := libcuda.MemAllocAsync(&p, 4*n, s); err != nil {
			return err
		}
		if p == 0 {
			return errors.New("no address from the captured cuMemAllocAsync")
		}
		if err := libcuda.MemsetD32Async(p, 7, n, s); err != nil {
			return err
		}
		if err := libcuda.MemcpyDtoDAsync(out, p, 4*n, s); err != nil {
			return err
		}
		return libcuda.MemFreeAsync(p, s)
	})
	want := []libcuda.GraphNodeType{libcuda.CU_GRAPH_NODE_TYPE_MEMCPY, libcuda.CU_GRAPH_NODE_TYPE_MEMSET,
		libcuda.CU_GRAPH_NODE_TYPE_MEM_ALLOC, libcuda.CU_GRAPH_NODE_TYPE_MEM_FREE}
	slices.Sort(want)
	if got := nodeTypes(t, g); !slices.Equal(got, want) {
		t.Errorf("node types %v, want %v", got, want)
	}
	var x libcuda.GraphExec
	testenv.Must(t, libcuda.GraphInstantiateWithFlags(&x, g, 0))
	t.Cleanup(func() { testenv.Must(t, libcuda.GraphExecDestroy(x)) })
	for range 3 {
		testenv.Must(t, libcuda.MemsetD32Async(out, 0, n, s))
		testenv.Must(t, libcuda.GraphLaunch(x, s))
		testenv.Must(t, libcuda.StreamSynchronize(s))
		got := make([]uint32, n)
		testenv.Must(t, libcuda.MemcpyDtoH(unsafe.Pointer(&got[0]), out, 4*n))
		if !slices.Equal(got, slices.Repeat([]uint32{7}, n)) {
			t.Fatalf("the launch copied %v..., want 7s", got[:4])
		}
	}
}

// An allocation not freed in its graph outlives the launch: it can be
// read after it, at the capture's address; a second launch before its
// free is CUDA_ERROR_INVALID_VALUE; after cuMemFreeAsync the graph
// launches again. With CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH the
// relaunch needs no free. The device's graph memory figures count it
// while it is live, and a trim after the graphs are gone leaves no more
// reserved than before.
func TestConformanceGraphAllocOutlivesTheLaunch(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	const n = 1 << 18
	var p libcuda.Deviceptr
	g := captureGraph(t, s, func() error {
		if err := libcuda.MemAllocAsync(&p, 4*n, s); err != nil {
			return err
		}
		return libcuda.MemsetD32Async(p, 9, n, s)
	})
	for _, flags := range []uint64{0, uint64(libcuda.CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)} {
		var x libcuda.GraphExec
		testenv.Must(t, libcuda.GraphInstantiateWithFlags(&x, g, flags))
		testenv.Must(t, libcuda.GraphLaunch(x, s))
		testenv.Must(t, libcuda.StreamSynchronize(s))
		got := make([]uint32, 4)
		testenv.Must(t, libcuda.MemcpyDtoH(unsafe.Pointer(&got[0]), p, 16))
		if !slices.Equal(got, []uint32{9, 9, 9, 9}) {
			t.Errorf("flags %d: after the launch the allocation holds %v, want 9s", flags, got)
		}
		used := graphMemAttr(t, libcuda.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT)
		reserved := graphMemAttr(t, libcuda.CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT)
		if used < 4*n || reserved < used {
			t.Errorf("flags %d: with %d bytes live, graph memory used %d, reserved %d", flags, 4*n, used, reserved)
		}
		err := libcuda.GraphLaunch(x, s)
		switch {
		case flags == 0 && !errors.Is(err, libcuda.CUDA_ERROR_INVALID_VALUE):
			t.Errorf("a second launch before the free: %v, want CUDA_ERROR_INVALID_VALUE", err)
		case flags != 0 && err != nil:
			t.Errorf("a second launch with AUTO_FREE_ON_LAUNCH: %v", err)
		}
		if flags == 0 {
			testenv.Must(t, libcuda.MemFreeAsync(p, s))
			testenv.Must(t, libcuda.GraphLaunch(x, s)) // allowed again after the free
		}
		testenv.Must(t, libcuda.MemFreeAsync(p, s))
		testenv.Must(t, libcuda.StreamSynchronize(s))
		testenv.Must(t, libcuda.GraphExecDestroy(x)) // one executable graph at a time
	}
	testenv.Must(t, libcuda.DeviceGraphMemTrim(0))
	if r := graphMemAttr(t, libcuda.CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT); r >= 4*n {
		t.Errorf("after the frees and a trim, %d bytes stay reserved for graphs", r)
	}
	// The high-water marks reset to the current figure; only 0 may be set.
	high := uint64(1)
	if err := libcuda.DeviceSetGraphMemAttribute(0, libcuda.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, unsafe.Pointer(&high)); !errors.Is(err, libcuda.CUDA_ERROR_INVALID_VALUE) {
		t.Errorf("setting the high-water mark to 1: %v, want CUDA_ERROR_INVALID_VALUE", err)
	}
	if h := graphMemAttr(t, libcuda.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH); h < 4*n {
		t.Errorf("used high-water mark %d, want at least %d", h, 4*n)
	}
	high = 0
	testenv.Must(t, libcuda.DeviceSetGraphMemAttribute(0, libcuda.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, unsafe.Pointer(&high)))
	if h := graphMemAttr(t, libcuda.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH); h >= 4*n {
		t.Errorf("used high-water mark %d after its reset, want below %d", h, 4*n)
	}
}

func graphMemAttr(t *testing.T, a libcuda.GraphMem_attribute) uint64 {
	t.Helper()
	var v uint64
	testenv.Must(t, libcuda.DeviceGetGraphMemAttribute(0, a, unsafe.Pointer(&v)))
	return v
}
