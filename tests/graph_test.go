package tests

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// graphKernels are the kernels the graph tests capture.
type graphKernels struct{ fill, addOne libcuda.Func }

func loadGraphKernels(t testing.TB) graphKernels {
	t.Helper()
	m := loadKernels(t)
	return graphKernels{fill: kernel(t, m, "fill_i32"), addOne: kernel(t, m, "add_one_i32")}
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
	must(t, libcuda.MemAlloc(&d, uint64(n*4)))
	must(t, libcuda.MemsetD32(d, 0, uint64(n)))
	t.Cleanup(func() {
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
	must(t, libcuda.MemHostAlloc(&p, uint64(n*4), uint32(libcuda.CU_MEMHOSTALLOC_PORTABLE)))
	t.Cleanup(func() {
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
	must(t, readInts(s, buf, host))
	if err := allEqual(host, want); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// drained waits for the package's background work.
func drained(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must(t, graph.Drain(ctx))
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
	if n := graph.InProgress(); n != 0 {
		t.Errorf("graph.InProgress() = %d after the captures ended", n)
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
// (the simulator keeps dead handles recognisable; on a GPU the handle
// would be freed memory, so nothing is checked there).
func graphGone(t testing.TB, g libcuda.Graph) {
	t.Helper()
	if onGPU || g == 0 {
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

func TestGraphCaptureInstantiateLaunchGivesTheRightResult(t *testing.T) {
	noErrorsLogged(t)
	onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 1000
	s := newStream(t)
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)

	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		return k.fillAdd(s, buf, n, 40, 2)
	})
	must(t, err)
	defer func() { must(t, g.Destroy()) }()
	checkInts(t, "after the capture (the work must not have run)", s, buf, host, 0)
	if nodes, err := g.Nodes(); err != nil || nodes != 3 {
		t.Fatalf("Nodes() = %d, %v; want 3 nodes", nodes, err)
	}
	e, err := g.Instantiate()
	must(t, err)
	defer func() { must(t, e.Destroy()) }()
	must(t, e.Launch(s))
	checkInts(t, "after one launch of fill 40, add, add", s, buf, host, 42)

	// A graph of add_one alone, launched three times.
	add, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		return k.addOne.Launch(graphGrid, graphBlock, 0, s, buf, uint64(n))
	})
	must(t, err)
	defer func() { must(t, add.Destroy()) }()
	ae, err := add.Instantiate()
	must(t, err)
	defer func() { must(t, ae.Destroy()) }()
	for range 3 {
		must(t, ae.Launch(s))
	}
	checkInts(t, "after three launches of add", s, buf, host, 45)
	noCaptureLeft(t)
}

func TestGraphCaptureWorksInEveryMode(t *testing.T) {
	noErrorsLogged(t)
	cu := primaryContext(t, 0)
	for i, mode := range captureModes {
		t.Run(modeName(mode), func(t *testing.T) {
			onThread(t, cu)
			k := loadGraphKernels(t)
			const n = 256
			s := newStream(t)
			buf := deviceInts(t, n)
			host := pinnedInts(t, n)
			g, err := graph.Capture(s, mode, func(s libcuda.Stream) error {
				return k.fillAdd(s, buf, n, int32(10*i), 1)
			})
			must(t, err)
			e, err := g.Instantiate()
			must(t, err)
			must(t, g.Destroy())
			must(t, e.Launch(s))
			checkInts(t, "after the launch", s, buf, host, int32(10*i+1))
			must(t, e.Destroy())
		})
	}
	noCaptureLeft(t)
}

func TestGraphUploadThenLaunch(t *testing.T) {
	noErrorsLogged(t)
	onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 256
	s := newStream(t)
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error { return k.fillAdd(s, buf, n, 6, 1) })
	must(t, err)
	defer func() { must(t, g.Destroy()) }()
	e, err := g.Instantiate()
	must(t, err)
	must(t, e.Upload(s))
	must(t, e.Launch(s))
	checkInts(t, "after upload and launch", s, buf, host, 7)
	must(t, e.Destroy())
	if err := e.Launch(s); !errors.Is(err, graph.ErrDestroyed) {
		t.Fatalf("Launch after Destroy = %v, want ErrDestroyed", err)
	}
	if err := e.Destroy(); !errors.Is(err, graph.ErrDestroyed) {
		t.Fatalf("a second Destroy = %v, want ErrDestroyed", err)
	}
}

func TestGraphExecUpdateInPlaceAppliesNewParameters(t *testing.T) {
	noErrorsLogged(t)
	onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 512
	s := newStream(t)
	buf, other := deviceInts(t, n), deviceInts(t, n)
	host := pinnedInts(t, n)
	capture := func(buf libcuda.Deviceptr, v int32, adds int) *graph.Graph {
		t.Helper()
		g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error { return k.fillAdd(s, buf, n, v, adds) })
		must(t, err)
		t.Cleanup(func() { must(t, g.Destroy()) })
		return g
	}
	e, err := capture(buf, 1, 0).Instantiate()
	must(t, err)
	defer func() { must(t, e.Destroy()) }()
	must(t, e.Launch(s))
	checkInts(t, "first graph", s, buf, host, 1)

	update := func(g *graph.Graph, want bool) {
		t.Helper()
		inPlace, err := e.Update(g)
		must(t, err)
		if inPlace != want {
			t.Fatalf("Update: inPlace = %v, want %v", inPlace, want)
		}
	}
	update(capture(buf, 2, 0), true) // a new value
	must(t, e.Launch(s))
	checkInts(t, "after an update with fill 2", s, buf, host, 2)

	update(capture(other, 5, 0), true) // a new pointer
	must(t, e.Launch(s))
	checkInts(t, "the other buffer after an update to it", s, other, host, 5)
	checkInts(t, "the first buffer after the update to the other", s, buf, host, 2)

	update(capture(buf, 9, 1), false) // another topology: refused, e unchanged
	must(t, e.Launch(s))
	checkInts(t, "the other buffer after a refused update", s, other, host, 5)
	checkInts(t, "the first buffer after a refused update", s, buf, host, 2)
}

func TestCachedCaptureUpdatesInPlaceAndInstantiatesAgainWhenTopologyChanges(t *testing.T) {
	noErrorsLogged(t)
	onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 300
	s := newStream(t)
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	c := graph.NewCached(graph.DefaultMode)
	run := func(v int32, adds int) {
		t.Helper()
		must(t, c.Run(s, func(s libcuda.Stream) error { return k.fillAdd(s, buf, n, v, adds) }))
		checkInts(t, fmt.Sprintf("after a run of fill %d and %d adds", v, adds), s, buf, host, v+int32(adds))
	}
	stats := func(want graph.CacheStats) {
		t.Helper()
		if got := c.Stats(); got != want {
			t.Fatalf("Stats() = %+v, want %+v", got, want)
		}
	}
	for v := range int32(5) {
		run(v, 0)
	}
	stats(graph.CacheStats{Runs: 5, Updates: 4, Instantiations: 1})

	// A failing function launches nothing and keeps the executable graph.
	boom := errors.New("boom")
	if err := c.Run(s, func(s libcuda.Stream) error {
		if err := k.fillAdd(s, buf, n, 77, 0); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Run of a failing function = %v, want its error", err)
	}
	checkInts(t, "after a failed run", s, buf, host, 4)
	stats(graph.CacheStats{Runs: 5, Updates: 4, Instantiations: 1})

	run(10, 1) // a new topology
	stats(graph.CacheStats{Runs: 6, Updates: 4, Instantiations: 2})
	run(20, 1)
	run(30, 1)
	stats(graph.CacheStats{Runs: 8, Updates: 6, Instantiations: 2})

	must(t, c.Close())
	if err := c.Close(); !errors.Is(err, graph.ErrDestroyed) {
		t.Fatalf("a second Close = %v, want ErrDestroyed", err)
	}
	if err := c.Run(s, func(libcuda.Stream) error { return nil }); !errors.Is(err, graph.ErrDestroyed) {
		t.Fatalf("Run after Close = %v, want ErrDestroyed", err)
	}
	noCaptureLeft(t)
}

func TestCaptureOfTheLegacyStreamIsRefusedClearly(t *testing.T) {
	onPrimary(t, 0)
	for _, s := range []libcuda.Stream{0, libcuda.CU_STREAM_LEGACY} {
		_, err := graph.Capture(s, graph.DefaultMode, func(libcuda.Stream) error {
			t.Fatal("the function ran")
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), "legacy") {
			t.Errorf("capture of stream %#x = %v, want an error about the legacy stream", uintptr(s), err)
		}
	}
	noCaptureLeft(t)
}

// Calls that a capture does not allow, made by the captured function:
// the capture's error says it was invalidated and by which call's error.
func TestCaptureInvalidatedByACallOfTheFunctionSaysWhichCall(t *testing.T) {
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	buf := deviceInts(t, n)
	calls := []struct {
		name string
		call func(s libcuda.Stream) error
	}{
		{"cuStreamSynchronize", libcuda.StreamSynchronize},
		{"cuStreamQuery", libcuda.StreamQuery},
		{"cuMemAlloc", func(libcuda.Stream) error {
			var d libcuda.Deviceptr
			err := libcuda.MemAlloc(&d, 64)
			if err == nil {
				err = errors.Join(errors.New("cuMemAlloc succeeded during the capture"), libcuda.MemFree(d))
			}
			return err
		}},
		{"cuCtxSynchronize", func(libcuda.Stream) error { return libcuda.CtxSynchronize() }},
	}
	for _, mode := range []libcuda.StreamCaptureMode{libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL} {
		for _, c := range calls {
			t.Run(modeName(mode)+"/"+c.name, func(t *testing.T) {
				onThread(t, cu)
				s := newStream(t)
				var partial libcuda.Graph
				g, err := graph.Capture(s, mode, func(s libcuda.Stream) error {
					if err := k.fillAdd(s, buf, n, 1, 1); err != nil {
						return err
					}
					var err error
					if partial, err = capturedGraph(s); err != nil {
						return err
					}
					if err := c.call(s); err != nil {
						return fmt.Errorf("%s: %w", c.name, err)
					}
					return nil
				})
				if g != nil {
					t.Fatal("an invalidated capture returned a graph")
				}
				var ce *graph.CaptureError
				if !errors.As(err, &ce) || !ce.Invalidated || !errors.Is(err, graph.ErrInvalidated) {
					t.Fatalf("capture = %v, want a *CaptureError matching ErrInvalidated", err)
				}
				if !errors.Is(err, libcuda.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) ||
					!strings.Contains(err.Error(), "invalidated by a call the captured function made: "+c.name) {
					t.Fatalf("capture = %v, want it to name the call's CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", err)
				}
				t.Log(err)
				graphGone(t, partial)
				var st libcuda.StreamCaptureStatus
				must(t, libcuda.StreamIsCapturing(s, &st))
				if st != libcuda.CU_STREAM_CAPTURE_STATUS_NONE {
					t.Fatalf("the stream is still capturing (%v)", st)
				}
			})
		}
	}
	noCaptureLeft(t)
}

// A capture invalidated by another thread: the function reported nothing,
// and the error says the call is not known.
func TestCaptureInvalidatedByAnotherThreadSaysTheCallIsNotKnown(t *testing.T) {
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	buf := deviceInts(t, n)
	s := newStream(t)
	th := newOSThread(t, cu) // in global mode
	var otherErr error
	_, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
		if err := k.fillAdd(s, buf, n, 1, 0); err != nil {
			return err
		}
		th.do(func() {
			var d libcuda.Deviceptr
			if otherErr = libcuda.MemAlloc(&d, 64); otherErr == nil {
				otherErr = libcuda.MemFree(d)
			}
		})
		return nil
	})
	if !errors.Is(otherErr, libcuda.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) {
		t.Fatalf("cuMemAlloc in global mode on another thread during a global capture = %v, want 900", otherErr)
	}
	var ce *graph.CaptureError
	if !errors.As(err, &ce) || !errors.Is(err, graph.ErrInvalidated) || ce.Err != nil {
		t.Fatalf("capture = %v, want an invalidated *CaptureError without a function error", err)
	}
	if !strings.Contains(err.Error(), "did not report") || !strings.Contains(err.Error(), "another thread in global mode") {
		t.Fatalf("capture = %q, want it to say the call was not reported and may come from another thread", err)
	}
	t.Log(err)
	noCaptureLeft(t)
}

func TestCaptureFunctionErrorIsReturnedAndNothingLeaks(t *testing.T) {
	noErrorsLogged(t)
	onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	buf := deviceInts(t, n)
	s := newStream(t)
	var leased counter
	var partial libcuda.Graph
	boom := errors.New("boom")
	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		if err := k.fillAdd(s, buf, n, 1, 0); err != nil {
			return err
		}
		if !graph.Lease(s, leased.release) {
			t.Error("Lease during the capture = false")
		}
		var err error
		if partial, err = capturedGraph(s); err != nil {
			return err
		}
		return boom
	})
	if g != nil || !errors.Is(err, boom) || errors.Is(err, graph.ErrInvalidated) {
		t.Fatalf("capture = %v, %v; want no graph and the function's error only", g, err)
	}
	graphGone(t, partial)
	drained(t)
	if leased.get() != 1 {
		t.Fatalf("the lease of the failed capture was released %d times, want once", leased.get())
	}
	noCaptureLeft(t)
}

func TestCapturePanicEndsTheCaptureAndIsReRaised(t *testing.T) {
	noErrorsLogged(t)
	onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	s := newStream(t)
	var leased counter
	var partial libcuda.Graph
	func() {
		defer func() {
			if r := recover(); r != "in the capture" {
				t.Fatalf("recovered %v, want the function's panic", r)
			}
		}()
		_, _ = graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
			must(t, k.fillAdd(s, buf, n, 1, 0))
			graph.Lease(s, leased.release)
			var err error
			partial, err = capturedGraph(s)
			must(t, err)
			panic("in the capture")
		})
	}()
	var st libcuda.StreamCaptureStatus
	must(t, libcuda.StreamIsCapturing(s, &st))
	if st != libcuda.CU_STREAM_CAPTURE_STATUS_NONE {
		t.Fatalf("the stream is still capturing after the panic (%v)", st)
	}
	noCaptureLeft(t)
	graphGone(t, partial)
	drained(t)
	if leased.get() != 1 {
		t.Fatalf("the lease of the panicked capture was released %d times, want once", leased.get())
	}
	// The thread's capture mode is as it was, and the stream captures again.
	mode := libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL
	must(t, libcuda.ThreadExchangeStreamCaptureMode(&mode))
	if mode != libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL {
		t.Fatalf("the thread's capture mode is %v after the panic", mode)
	}
	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error { return k.fillAdd(s, buf, n, 3, 0) })
	must(t, err)
	e, err := g.Instantiate()
	must(t, err)
	must(t, e.Launch(s))
	checkInts(t, "a capture after the panic", s, buf, host, 3)
	must(t, e.Destroy())
	must(t, g.Destroy())
}

// Garbage collection during a capture, with graphs and executable graphs
// left to the collector, breaks nothing; those are destroyed after the
// capture and their leases released.
func TestGCDuringCaptureBreaksNothing(t *testing.T) {
	noErrorsLogged(t)
	onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 1024
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	s, other := newStream(t), newStream(t)
	var leased counter
	var dropped []libcuda.Graph
	// Graphs and executable graphs dropped without Destroy, one of them
	// launched, each with a lease.
	for i := range 3 {
		g, err := graph.Capture(other, graph.DefaultMode, func(s libcuda.Stream) error {
			graph.Lease(s, leased.release)
			return k.fillAdd(s, buf, n, 0, 1)
		})
		must(t, err)
		dropped = append(dropped, g.Raw())
		if i > 0 {
			e, err := g.Instantiate()
			must(t, err)
			if i == 2 {
				must(t, e.Launch(other))
			}
		}
	}
	must(t, sync.Stream(context.Background(), 0, other))

	var garbage [][]byte
	g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
		for i := range 5 {
			for range 1000 {
				garbage = append(garbage, make([]byte, 1024))
			}
			garbage = nil
			runtime.GC()
			if err := k.fillAdd(s, buf, n, int32(100*i), 1); err != nil {
				return err
			}
		}
		return nil
	})
	must(t, err)
	e, err := g.Instantiate()
	must(t, err)
	must(t, e.Launch(s))
	checkInts(t, "after the launch", s, buf, host, 401)
	must(t, e.Destroy())
	must(t, g.Destroy())

	deadline := time.Now().Add(10 * time.Second)
	for leased.get() < 3 && time.Now().Before(deadline) {
		runtime.GC()
		drained(t)
		time.Sleep(time.Millisecond)
	}
	if leased.get() != 3 {
		t.Fatalf("%d of the 3 leases of dropped graphs were released", leased.get())
	}
	for _, raw := range dropped {
		graphGone(t, raw)
	}
}

// Other goroutines wait on their own streams, copy, free, destroy graphs and
// release leases while a global capture is in progress: the capture is not
// invalidated and the work postponed meanwhile runs after it.
func TestGlobalCaptureSurvivesOtherGoroutinesWaitsCopiesAndFrees(t *testing.T) {
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 2048
	buf, src, dst := deviceInts(t, n), deviceInts(t, n), deviceInts(t, n)
	host := pinnedInts(t, n)
	var spare libcuda.Deviceptr
	must(t, libcuda.MemAlloc(&spare, 4096))
	s, busy, copies, launches := newStream(t), newStream(t), newStream(t), newStream(t)
	gt := newGate(t)
	gt.hold(t, busy)

	// A graph with a lease, launched on a held stream, to destroy during the capture.
	var leased counter
	og, err := graph.Capture(launches, graph.DefaultMode, func(s libcuda.Stream) error {
		graph.Lease(s, leased.release)
		return k.fillAdd(s, src, n, 7, 0)
	})
	must(t, err)
	oe, err := og.Instantiate()
	must(t, err)
	must(t, libcuda.StreamWaitValue32(launches, gt.dev, 1, uint32(libcuda.CU_STREAM_WAIT_VALUE_GEQ)))
	must(t, oe.Launch(launches))

	var postponedDuring atomic.Int32
	postponed := make(chan error, 1)
	g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
		if err := k.fillAdd(s, buf, n, 1, 1); err != nil {
			return err
		}
		var wg gosync.WaitGroup
		errs := make(chan error, 8)
		run := func(f func() error) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := libcuda.WithContext(cu, f); err != nil {
					errs <- err
				}
			}()
		}
		waited := make(chan error, 1)
		run(func() error { // a wait on a busy stream of its own
			err := sync.Stream(context.Background(), 0, busy)
			waited <- err
			return err
		})
		run(func() error { // destroy a graph and an executable graph whose launch is still held
			return errors.Join(oe.Destroy(), og.Destroy())
		})
		run(func() error { // copies on another stream
			if err := libcuda.MemcpyDtoDAsync(dst, buf, n*4, copies); err != nil {
				return err
			}
			if err := libcuda.MemcpyHtoDAsync(dst, unsafe.Pointer(&host[0]), n*4, copies); err != nil {
				return err
			}
			return sync.Stream(context.Background(), 0, copies)
		})
		run(func() error { // a free and an allocation, in relaxed mode
			return graph.Relaxed(func() error {
				var d libcuda.Deviceptr
				if err := libcuda.MemAlloc(&d, 4096); err != nil {
					return err
				}
				return errors.Join(libcuda.MemFree(d), libcuda.MemFree(spare))
			})
		})
		graph.Postpone(func() { // a wait for the whole context: postponed
			postponedDuring.Store(int32(graph.InProgress()))
			postponed <- sync.Context(context.Background(), cu)
		})
		stillWaiting(t, "the busy stream's wait", waited)
		gt.open()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("work on another goroutine during the capture: %v", err)
		}
		return k.addOne.Launch(graphGrid, graphBlock, 0, s, buf, uint64(n))
	})
	must(t, err)
	drained(t)
	if leased.get() != 1 {
		t.Errorf("the lease of the graph destroyed during the capture was released %d times, want once", leased.get())
	}
	select {
	case err := <-postponed:
		must(t, err)
	default:
		t.Fatal("the postponed function did not run")
	}
	if n := postponedDuring.Load(); n != 0 {
		t.Errorf("the postponed function ran with %d captures in progress", n)
	}
	e, err := g.Instantiate()
	must(t, err)
	must(t, e.Launch(s))
	checkInts(t, "the graph captured meanwhile", s, buf, host, 3)
	must(t, e.Destroy())
	must(t, g.Destroy())
}

// Captures on several goroutines at once, in every mode, with leases,
// cached captures and executable graphs destroyed while others capture,
// next to goroutines that wait, copy and postpone work.
func TestConcurrentCapturesWithReleaseWork(t *testing.T) {
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	k := loadGraphKernels(t)
	const (
		capturers = 4
		rounds    = 12
		n         = 256
	)
	type lane struct {
		s, copies libcuda.Stream
		buf, dst  libcuda.Deviceptr
		host      []int32
	}
	lanes := make([]lane, capturers+2)
	for i := range lanes {
		lanes[i] = lane{newStream(t), newStream(t), deviceInts(t, n), deviceInts(t, n), pinnedInts(t, n)}
	}
	var leased, leases counter
	var postponed atomic.Int32
	stop := make(chan struct{})
	errs := make(chan error, len(lanes))
	var capturing, working gosync.WaitGroup
	work := func(wg *gosync.WaitGroup, name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := libcuda.WithContext(cu, f); err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	for i := range capturers {
		l := lanes[i]
		mode := captureModes[i%len(captureModes)]
		work(&capturing, fmt.Sprintf("capturer %d (%s)", i, modeName(mode)), func() error {
			c := graph.NewCached(mode)
			for r := range rounds {
				v := int32(1000*i + r)
				lease := func(s libcuda.Stream) {
					if graph.Lease(s, leased.release) {
						leases.release()
					}
				}
				if r%2 == 0 {
					g, err := graph.Capture(l.s, mode, func(s libcuda.Stream) error {
						lease(s)
						return k.fillAdd(s, l.buf, n, v, 1)
					})
					if err != nil {
						return err
					}
					e, err := g.Instantiate()
					if err != nil {
						return errors.Join(err, g.Destroy())
					}
					if err := errors.Join(g.Destroy(), e.Launch(l.s), e.Destroy()); err != nil {
						return err
					}
				} else if err := c.Run(l.s, func(s libcuda.Stream) error {
					lease(s)
					return k.fillAdd(s, l.buf, n, v, 1)
				}); err != nil {
					return errors.Join(err, c.Close())
				}
				if err := readInts(l.s, l.buf, l.host); err != nil {
					return errors.Join(err, c.Close())
				}
				if err := allEqual(l.host, v+1); err != nil {
					return errors.Join(fmt.Errorf("round %d: %w", r, err), c.Close())
				}
				graph.Postpone(func() { postponed.Add(1) })
			}
			return c.Close()
		})
	}
	for j := capturers; j < len(lanes); j++ {
		l := lanes[j]
		work(&working, fmt.Sprintf("worker %d", j), func() error {
			for v := int32(0); ; v++ {
				select {
				case <-stop:
					return nil
				default:
				}
				if err := k.fillAdd(l.s, l.buf, n, v, 0); err != nil {
					return err
				}
				// The copy is ordered after the fill only by the wait.
				if err := sync.Stream(context.Background(), 0, l.s); err != nil {
					return err
				}
				if err := libcuda.MemcpyDtoDAsync(l.dst, l.buf, n*4, l.copies); err != nil {
					return err
				}
				if err := readInts(l.copies, l.dst, l.host); err != nil {
					return err
				}
				if err := allEqual(l.host, v); err != nil {
					return fmt.Errorf("after a wait during captures: %w", err)
				}
			}
		})
	}
	capturing.Wait()
	close(stop)
	working.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	drained(t)
	if leases.get() != capturers*rounds || leased.get() != leases.get() {
		t.Fatalf("%d leases taken, %d released; want %d of each", leases.get(), leased.get(), capturers*rounds)
	}
	if got := postponed.Load(); got != capturers*rounds {
		t.Fatalf("%d postponed functions ran, want %d", got, capturers*rounds)
	}
	noCaptureLeft(t)
}

func TestInProgressCountsCapturesAcrossGoroutines(t *testing.T) {
	onPrimary(t, 0)
	const capturers = 3
	release := make(chan struct{})
	errs := make(chan error, capturers)
	var wg gosync.WaitGroup
	for range capturers {
		s := newStream(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := graph.Capture(s, graph.DefaultMode, func(libcuda.Stream) error {
				<-release
				return nil
			})
			if err == nil {
				err = g.Destroy()
			}
			errs <- err
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for graph.InProgress() != capturers && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := graph.InProgress(); got != capturers {
		t.Errorf("InProgress() = %d during %d captures", got, capturers)
	}
	if got := sync.CapturesInProgress(); got < capturers {
		t.Errorf("sync.CapturesInProgress() = %d during %d captures", got, capturers)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	noCaptureLeft(t)
}

// blockedCapture starts a capture on a goroutine of its own that stays in
// progress until the returned function is called; that function returns
// the capture's error.
func blockedCapture(t *testing.T, s libcuda.Stream) (end func() error) {
	t.Helper()
	begun, release := make(chan struct{}), make(chan struct{})
	res := make(chan error, 1)
	go func() {
		g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(libcuda.Stream) error {
			close(begun)
			<-release
			return nil
		})
		if err == nil {
			err = g.Destroy()
		}
		res <- err
	}()
	select {
	case <-begun:
	case <-time.After(10 * time.Second):
		t.Fatal("the capture did not begin")
	}
	return func() error {
		close(release)
		return <-res
	}
}

func TestPostponedWorkRunsOnceInOrderAfterCapturesEnd(t *testing.T) {
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	end1 := blockedCapture(t, newStream(t))
	end2 := blockedCapture(t, newStream(t))

	var mu gosync.Mutex
	var order []int
	var during atomic.Int32
	const n = 100
	for i := range n {
		graph.Postpone(func() {
			if graph.InProgress() != 0 {
				during.Add(1)
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		})
	}
	// A wait for the whole context, which no capture allows, queued too.
	ctxWait := make(chan error, 1)
	graph.Postpone(func() { ctxWait <- sync.Context(context.Background(), cu) })
	ran := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(order)
	}
	time.Sleep(20 * time.Millisecond)
	if got := ran(); got != 0 {
		t.Fatalf("%d postponed functions ran during two captures", got)
	}
	must(t, end1())
	time.Sleep(20 * time.Millisecond)
	if got := ran(); got != 0 {
		t.Fatalf("%d postponed functions ran while a capture was still in progress", got)
	}
	must(t, end2())
	drained(t)
	mu.Lock()
	defer mu.Unlock()
	if len(order) != n {
		t.Fatalf("%d postponed functions ran, want %d", len(order), n)
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("postponed functions ran in the order %v", order)
		}
	}
	if during.Load() != 0 {
		t.Fatalf("%d postponed functions ran while a capture was in progress", during.Load())
	}
	must(t, <-ctxWait)
	noCaptureLeft(t)
}

func TestPostponedWorkRunsAtOnceWhenNothingCaptures(t *testing.T) {
	done := make(chan struct{})
	graph.Postpone(func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a function postponed while nothing captures did not run")
	}
	drained(t)
}

// A capture that starts while a postponed function runs waits for it.
func TestCaptureWaitsForARunningPostponedFunction(t *testing.T) {
	noErrorsLogged(t)
	onPrimary(t, 0)
	s := newStream(t)
	running, finish := make(chan struct{}), make(chan struct{})
	graph.Postpone(func() {
		close(running)
		<-finish
	})
	<-running
	captured := waitAsync(func() error {
		g, err := graph.Capture(s, graph.DefaultMode, func(libcuda.Stream) error { return nil })
		if err == nil {
			err = g.Destroy()
		}
		return err
	})
	stillWaiting(t, "a capture during a postponed function", captured)
	var st libcuda.StreamCaptureStatus
	must(t, libcuda.StreamIsCapturing(s, &st))
	if st != libcuda.CU_STREAM_CAPTURE_STATUS_NONE {
		t.Fatal("the capture began while a postponed function ran")
	}
	close(finish)
	finished(t, "the capture after the postponed function", captured)
	drained(t)
}

func TestRelaxedRestoresTheModeAlsoAfterAPanic(t *testing.T) {
	onPrimary(t, 0)
	exchange := func(m libcuda.StreamCaptureMode) libcuda.StreamCaptureMode {
		t.Helper()
		must(t, libcuda.ThreadExchangeStreamCaptureMode(&m))
		return m
	}
	exchange(libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
	defer exchange(libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL)
	current := func() libcuda.StreamCaptureMode {
		m := exchange(libcuda.CU_STREAM_CAPTURE_MODE_RELAXED)
		exchange(m)
		return m
	}

	boom := errors.New("boom")
	var inside libcuda.StreamCaptureMode
	if err := graph.Relaxed(func() error { inside = current(); return boom }); !errors.Is(err, boom) {
		t.Fatalf("Relaxed = %v, want the function's error", err)
	}
	if inside != libcuda.CU_STREAM_CAPTURE_MODE_RELAXED {
		t.Fatalf("the mode inside Relaxed was %v", inside)
	}
	if m := current(); m != libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL {
		t.Fatalf("the mode after Relaxed is %v, want thread-local", m)
	}
	func() {
		defer func() {
			if r := recover(); r != "in relaxed" {
				t.Fatalf("recovered %v, want the function's panic", r)
			}
		}()
		_ = graph.Relaxed(func() error { panic("in relaxed") })
	}()
	if m := current(); m != libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL {
		t.Fatalf("the mode after a panic in Relaxed is %v, want thread-local", m)
	}
}

func TestRelaxedCallsDoNotInvalidateAnotherGoroutinesGlobalCapture(t *testing.T) {
	noErrorsLogged(t)
	onPrimary(t, 0)
	other := newStream(t)
	var e libcuda.Event
	must(t, libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	defer func() { must(t, libcuda.EventDestroy(e)) }()
	must(t, libcuda.EventRecord(e, other))
	end := blockedCapture(t, newStream(t))
	err := graph.Relaxed(func() error {
		var d libcuda.Deviceptr
		if err := libcuda.MemAlloc(&d, 4096); err != nil {
			return err
		}
		return errors.Join(libcuda.MemFree(d), libcuda.EventSynchronize(e), libcuda.StreamQuery(other))
	})
	must(t, errors.Join(err, end()))
}

// A lease is released only once the graph and every executable graph made
// from it are destroyed and the last launch has finished; Destroy does not
// wait for that.
func TestLeaseIsReleasedOnlyAfterExecDestroyedAndLastLaunchFinished(t *testing.T) {
	noErrorsLogged(t)
	onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 256
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	s, launches, notCaptured := newStream(t), newStream(t), newStream(t)
	gt := newGate(t)
	var leased counter
	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		if graph.Lease(notCaptured, func() { t.Error("a lease on a stream not captured was kept") }) {
			t.Error("Lease on a stream that is not captured = true")
		}
		if !graph.Lease(s, leased.release) {
			t.Error("Lease on the capturing stream = false")
		}
		return k.fillAdd(s, buf, n, 8, 1)
	})
	must(t, err)
	e1, err := g.Instantiate()
	must(t, err)
	e2, err := g.Instantiate()
	must(t, err)
	gt.hold(t, launches)
	must(t, e1.Launch(launches))
	must(t, e1.Launch(launches))

	must(t, g.Destroy())
	must(t, e2.Destroy())
	drained(t)
	if leased.get() != 0 {
		t.Fatal("the lease was released while an executable graph still existed")
	}
	start := time.Now()
	must(t, e1.Destroy())
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Destroy took %v while the launch was held: it must not wait", d)
	}
	stillPending(t, "while the last launch is held")
	if leased.get() != 0 {
		t.Fatal("the lease was released before the last launch finished")
	}
	gt.open()
	drained(t)
	if leased.get() != 1 {
		t.Fatalf("the lease was released %d times, want once", leased.get())
	}
	checkInts(t, "after the launches", launches, buf, host, 9)
	if graph.Lease(s, leased.release) {
		t.Fatal("Lease after the capture = true")
	}
}

func TestLeaseFollowsUpdatesOfTheExec(t *testing.T) {
	noErrorsLogged(t)
	onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 256
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	s, launches := newStream(t), newStream(t)
	gt := newGate(t)
	var first, second counter
	capture := func(c *counter, v int32) *graph.Graph {
		g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
			graph.Lease(s, c.release)
			return k.fillAdd(s, buf, n, v, 0)
		})
		must(t, err)
		return g
	}
	g1 := capture(&first, 1)
	e, err := g1.Instantiate()
	must(t, err)
	must(t, g1.Destroy())
	gt.hold(t, launches)
	must(t, e.Launch(launches)) // held: it uses what the first lease holds

	g2 := capture(&second, 2)
	inPlace, err := e.Update(g2)
	must(t, err)
	if !inPlace {
		t.Fatal("the update was not in place")
	}
	must(t, g2.Destroy())
	stillPending(t, "while the launch made before the update is held")
	if first.get() != 0 {
		t.Fatal("the first lease was released while a launch made before the update was held")
	}
	gt.open()
	drained(t)
	if first.get() != 1 || second.get() != 0 {
		t.Fatalf("after the held launch: first lease released %d times, second %d; want 1 and 0", first.get(), second.get())
	}
	must(t, e.Launch(launches))
	checkInts(t, "after the updated launch", launches, buf, host, 2)
	must(t, e.Destroy())
	drained(t)
	if second.get() != 1 {
		t.Fatalf("the second lease was released %d times, want once", second.get())
	}
}

// A stream that joins the capture through an event is part of it: a lease
// taken on it belongs to that capture.
func TestLeaseOnAStreamThatJoinedTheCapture(t *testing.T) {
	noErrorsLogged(t)
	onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 256
	a, b := deviceInts(t, n), deviceInts(t, n)
	host := pinnedInts(t, n)
	s, forked := newStream(t), newStream(t)
	var fork, join libcuda.Event
	for _, e := range []*libcuda.Event{&fork, &join} {
		must(t, libcuda.EventCreate(e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
		defer func() { must(t, libcuda.EventDestroy(*e)) }()
	}
	var leased counter
	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		if err := k.fillAdd(s, a, n, 1, 0); err != nil {
			return err
		}
		if err := libcuda.EventRecord(fork, s); err != nil {
			return err
		}
		if err := libcuda.StreamWaitEvent(forked, fork, 0); err != nil {
			return err
		}
		if !graph.Lease(forked, leased.release) {
			return errors.New("Lease on the stream that joined the capture = false")
		}
		if err := k.fillAdd(forked, b, n, 2, 1); err != nil {
			return err
		}
		if err := libcuda.EventRecord(join, forked); err != nil {
			return err
		}
		return libcuda.StreamWaitEvent(s, join, 0)
	})
	must(t, err)
	e, err := g.Instantiate()
	must(t, err)
	must(t, e.Launch(s))
	checkInts(t, "the origin stream's buffer", s, a, host, 1)
	checkInts(t, "the joined stream's buffer", s, b, host, 3)
	drained(t)
	if leased.get() != 0 {
		t.Fatal("the lease taken on the joined stream was released while the graphs lived")
	}
	must(t, g.Destroy())
	must(t, e.Destroy())
	drained(t)
	if leased.get() != 1 {
		t.Fatalf("the lease taken on the joined stream was released %d times, want once", leased.get())
	}
}

// The driver refuses to launch an executable graph into a stream capture
// and invalidates the capture (H200); Launch refuses it first, clearly,
// and the capture goes on.
func TestExecLaunchIntoACaptureIsRefusedAndTheCaptureSurvives(t *testing.T) {
	noErrorsLogged(t)
	onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 256
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	s := newStream(t)
	var leased counter
	inner, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		graph.Lease(s, leased.release)
		return k.fillAdd(s, buf, n, 50, 0)
	})
	must(t, err)
	ie, err := inner.Instantiate()
	must(t, err)
	must(t, inner.Destroy())
	var launchErr error
	outer, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		launchErr = ie.Launch(s)
		return k.fillAdd(s, buf, n, 7, 0)
	})
	must(t, err)
	if !errors.Is(launchErr, libcuda.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) {
		t.Fatalf("launch into a capture = %v, want CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", launchErr)
	}
	oe, err := outer.Instantiate()
	must(t, err)
	must(t, oe.Launch(s))
	checkInts(t, "after the outer graph's launch", s, buf, host, 7)
	must(t, outer.Destroy())
	must(t, oe.Destroy())
	must(t, ie.Destroy())
	drained(t)
	if leased.get() != 1 {
		t.Fatalf("the inner graph's lease was released %d times, want once", leased.get())
	}
}

// What a capture does not allow gives clear errors: waits through package
// sync on the capturing stream are refused without breaking the capture,
// and a capture of a stream already being captured is refused.
func TestOperationsNotAllowedInACaptureReturnClearErrors(t *testing.T) {
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	s := newStream(t)
	g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
		if err := k.fillAdd(s, buf, n, 4, 0); err != nil {
			return err
		}
		if err := sync.Stream(context.Background(), 0, s); !errors.Is(err, sync.ErrCapturing) {
			return fmt.Errorf("a wait on the capturing stream = %v, want ErrCapturing", err)
		}
		if err := sync.Context(context.Background(), cu); !errors.Is(err, sync.ErrCapturing) {
			return fmt.Errorf("a wait on the context = %v, want ErrCapturing", err)
		}
		_, err := graph.Capture(s, graph.DefaultMode, func(libcuda.Stream) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "cannot begin capturing") {
			return fmt.Errorf("a nested capture of the same stream = %v, want a refusal to begin", err)
		}
		t.Logf("nested capture: %v", err)
		return nil
	})
	must(t, err)
	e, err := g.Instantiate()
	must(t, err)
	must(t, e.Launch(s))
	checkInts(t, "after the launch", s, buf, host, 4)
	must(t, e.Destroy())
	must(t, g.Destroy())
	noCaptureLeft(t)
}
