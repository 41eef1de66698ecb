package graph_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Helpers of the graph tests; the tests are split by concept: capture_test.go,
// exec_test.go, cached_test.go, lease_test.go, postpone_test.go, relaxed_test.go.

// graphKernels are the kernels the graph tests capture.
type graphKernels struct{ fill, addOne libcuda.Func }

func loadGraphKernels(t testing.TB) graphKernels {
	t.Helper()
	m := testenv.LoadKernels(t)
	return graphKernels{fill: testenv.Kernel(t, m, "fill_i32"), addOne: testenv.Kernel(t, m, "add_one_i32")}
}

var (
	graphGrid  = libcuda.Dim3{X: 4}
	graphBlock = libcuda.Dim3{X: 256}
)

// fillAdd issues fill(buf, v) and then adds add_one adds times on s.
func (k graphKernels) fillAdd(s libcuda.Stream, buf libcuda.Deviceptr, n uint64, v int32, adds int) error {
	if err := k.fill.Launch(graphGrid, graphBlock, 0, s, buf, n, v); err != nil {
		return err
	}
	for range adds {
		if err := k.addOne.Launch(graphGrid, graphBlock, 0, s, buf, n); err != nil {
			return err
		}
	}
	return nil
}

// deviceInts allocates n int32 of device memory, freed when the test ends.
// The calling thread must have the context current.
func deviceInts(t testing.TB, n int) libcuda.Deviceptr {
	t.Helper()
	var d libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&d, uint64(n*4)))
	testenv.Must(t, libcuda.MemsetD32(d, 0, uint64(n)))
	testenv.Fenced(t, func() {
		if err := libcuda.MemFree(d); err != nil {
			t.Errorf("cuMemFree: %v", err)
		}
	})
	return d
}

// pinnedInts allocates n int32 of pinned host memory, freed when the test
// ends: copies into it are allowed while other threads capture.
func pinnedInts(t testing.TB, n int) []int32 {
	t.Helper()
	var p unsafe.Pointer
	testenv.Must(t, libcuda.MemHostAlloc(&p, uint64(n*4), uint32(libcuda.CU_MEMHOSTALLOC_PORTABLE)))
	testenv.Fenced(t, func() {
		if err := libcuda.MemFreeHost(p); err != nil {
			t.Errorf("cuMemFreeHost: %v", err)
		}
	})
	return unsafe.Slice((*int32)(p), n)
}

// readInts copies buf into host on s and waits for it.
func readInts(s libcuda.Stream, buf libcuda.Deviceptr, host []int32) error {
	if err := libcuda.MemcpyDtoHAsync(unsafe.Pointer(&host[0]), buf, uint64(len(host)*4), s); err != nil {
		return err
	}
	return sync.Stream(context.Background(), 0, s)
}

// allEqual returns an error naming the first element of got that is not want.
func allEqual(got []int32, want int32) error {
	for i, v := range got {
		if v != want {
			return fmt.Errorf("element %d = %d, want %d", i, v, want)
		}
	}
	return nil
}

func checkInts(t testing.TB, what string, s libcuda.Stream, buf libcuda.Deviceptr, host []int32, want int32) {
	t.Helper()
	testenv.Must(t, readInts(s, buf, host))
	if err := allEqual(host, want); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// drained waits for the package's background work.
func drained(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	testenv.Must(t, graph.Drain(ctx))
}

// stillPending checks that background work remains after a short wait.
func stillPending(t testing.TB, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := graph.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s: Drain = %v, want the deadline", what, err)
	}
}

// noCaptureLeft checks that the package and package sync count no capture.
func noCaptureLeft(t testing.TB) {
	t.Helper()
	if n := sync.CapturesInProgress(); n != 0 {
		t.Errorf("sync.CapturesInProgress() = %d after the captures ended", n)
	}
	if n := sync.CapturesInProgress(); n != 0 {
		t.Errorf("sync.CapturesInProgress() = %d after the captures ended", n)
	}
}

// capturedGraph returns the driver's handle of the graph being captured on s.
func capturedGraph(s libcuda.Stream) (libcuda.Graph, error) {
	var st libcuda.StreamCaptureStatus
	var g libcuda.Graph
	err := libcuda.StreamGetCaptureInfo(s, &st, nil, &g, nil, nil, nil)
	return g, err
}

// graphGone checks, on the simulator, that a graph handle was destroyed
// (the simulator keeps a dead handle recognisable until a new graph takes
// its place, and no graph is created between the capture and this check;
// on a GPU the handle would be freed memory, so nothing is checked there).
func graphGone(t testing.TB, g libcuda.Graph) {
	t.Helper()
	if testenv.OnGPU || g == 0 {
		return
	}
	var n uint64
	if err := libcuda.GraphGetNodes(g, nil, &n); err == nil {
		t.Errorf("the captured graph %#x still exists (%d nodes)", uintptr(g), n)
	}
}

// counter counts calls of a release function.
type counter struct{ n atomic.Int32 }

func (c *counter) release() { c.n.Add(1) }

func (c *counter) get() int { return int(c.n.Load()) }
