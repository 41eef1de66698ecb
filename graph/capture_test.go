package graph_test

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
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

func TestGraphCaptureInstantiateLaunchGivesTheRightResult(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 1000
	s := testenv.NewStream(t)
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)

	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		return k.fillAdd(s, buf, n, 40, 2)
	})
	testenv.Must(t, err)
	defer func() { testenv.MustBounded(t, "g.Destroy", g.Destroy) }()
	checkInts(t, "after the capture (the work must not have run)", s, buf, host, 0)
	if nodes, err := g.Nodes(); err != nil || nodes != 3 {
		t.Fatalf("Nodes() = %d, %v; want 3 nodes", nodes, err)
	}
	e, err := g.Instantiate()
	testenv.Must(t, err)
	defer func() { testenv.MustBounded(t, "e.Destroy", e.Destroy) }()
	testenv.Must(t, e.Launch(s))
	checkInts(t, "after one launch of fill 40, add, add", s, buf, host, 42)

	// A graph of add_one alone, launched three times.
	add, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		return k.addOne.Launch(graphGrid, graphBlock, 0, s, buf, uint64(n))
	})
	testenv.Must(t, err)
	defer func() { testenv.MustBounded(t, "add.Destroy", add.Destroy) }()
	ae, err := add.Instantiate()
	testenv.Must(t, err)
	defer func() { testenv.MustBounded(t, "ae.Destroy", ae.Destroy) }()
	for range 3 {
		testenv.Must(t, ae.Launch(s))
	}
	checkInts(t, "after three launches of add", s, buf, host, 45)
	noCaptureLeft(t)
}

func TestGraphCaptureWorksInEveryMode(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.PrimaryContext(t, 0)
	for i, mode := range captureModes {
		t.Run(modeName(mode), func(t *testing.T) {
			testenv.OnThread(t, cu)
			k := loadGraphKernels(t)
			const n = 256
			s := testenv.NewStream(t)
			buf := deviceInts(t, n)
			host := pinnedInts(t, n)
			g, err := graph.Capture(s, mode, func(s libcuda.Stream) error {
				return k.fillAdd(s, buf, n, int32(10*i), 1)
			})
			testenv.Must(t, err)
			e, err := g.Instantiate()
			testenv.Must(t, err)
			testenv.MustBounded(t, "g.Destroy", g.Destroy)
			testenv.Must(t, e.Launch(s))
			checkInts(t, "after the launch", s, buf, host, int32(10*i+1))
			testenv.MustBounded(t, "e.Destroy", e.Destroy)
		})
	}
	noCaptureLeft(t)
}

func TestCaptureOfTheLegacyStreamIsRefusedClearly(t *testing.T) {
	testenv.OnPrimary(t, 0)
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
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
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
				testenv.OnThread(t, cu)
				s := testenv.NewStream(t)
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
				testenv.Must(t, libcuda.StreamIsCapturing(s, &st))
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
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	buf := deviceInts(t, n)
	s := testenv.NewStream(t)
	th := testenv.NewOSThread(t, cu) // in global mode
	var otherErr error
	_, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
		if err := k.fillAdd(s, buf, n, 1, 0); err != nil {
			return err
		}
		th.Do(func() {
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
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	buf := deviceInts(t, n)
	s := testenv.NewStream(t)
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
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	s := testenv.NewStream(t)
	var leased counter
	var partial libcuda.Graph
	func() {
		defer func() {
			if r := recover(); r != "in the capture" {
				t.Fatalf("recovered %v, want the function's panic", r)
			}
		}()
		_, _ = graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
			testenv.Must(t, k.fillAdd(s, buf, n, 1, 0))
			graph.Lease(s, leased.release)
			var err error
			partial, err = capturedGraph(s)
			testenv.Must(t, err)
			panic("in the capture")
		})
	}()
	var st libcuda.StreamCaptureStatus
	testenv.Must(t, libcuda.StreamIsCapturing(s, &st))
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
	testenv.Must(t, libcuda.ThreadExchangeStreamCaptureMode(&mode))
	if mode != libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL {
		t.Fatalf("the thread's capture mode is %v after the panic", mode)
	}
	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error { return k.fillAdd(s, buf, n, 3, 0) })
	testenv.Must(t, err)
	e, err := g.Instantiate()
	testenv.Must(t, err)
	testenv.Must(t, e.Launch(s))
	checkInts(t, "a capture after the panic", s, buf, host, 3)
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
}

// Garbage collection during a capture, with graphs and executable graphs
// left to the collector, breaks nothing; those are destroyed after the
// capture and their leases released.
func TestGCDuringCaptureBreaksNothing(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 1024
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	s, other := testenv.NewStream(t), testenv.NewStream(t)
	var leased counter
	var dropped []libcuda.Graph
	// Graphs and executable graphs dropped without Destroy, one of them
	// launched, each with a lease.
	for i := range 3 {
		g, err := graph.Capture(other, graph.DefaultMode, func(s libcuda.Stream) error {
			graph.Lease(s, leased.release)
			return k.fillAdd(s, buf, n, 0, 1)
		})
		testenv.Must(t, err)
		dropped = append(dropped, g.Raw())
		if i > 0 {
			e, err := g.Instantiate()
			testenv.Must(t, err)
			if i == 2 {
				testenv.Must(t, e.Launch(other))
			}
		}
	}
	testenv.Must(t, sync.Stream(testenv.Context(t), 0, other))

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
	testenv.Must(t, err)
	e, err := g.Instantiate()
	testenv.Must(t, err)
	testenv.Must(t, e.Launch(s))
	checkInts(t, "after the launch", s, buf, host, 401)
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)

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
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 2048
	buf, src, dst := deviceInts(t, n), deviceInts(t, n), deviceInts(t, n)
	host := pinnedInts(t, n)
	var spare libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&spare, 4096))
	s, busy, copies, launches := testenv.NewStream(t), testenv.NewStream(t), testenv.NewStream(t), testenv.NewStream(t)
	gt := testenv.NewGate(t)
	gt.Hold(t, busy)

	// A graph with a lease, launched on a held stream, to destroy during the capture.
	var leased counter
	og, err := graph.Capture(launches, graph.DefaultMode, func(s libcuda.Stream) error {
		graph.Lease(s, leased.release)
		return k.fillAdd(s, src, n, 7, 0)
	})
	testenv.Must(t, err)
	oe, err := og.Instantiate()
	testenv.Must(t, err)
	testenv.Must(t, libcuda.StreamWaitValue32(launches, gt.Dev(), 1, uint32(libcuda.CU_STREAM_WAIT_VALUE_GEQ)))
	testenv.Must(t, oe.Launch(launches))

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
			return sync.Relaxed(func() error {
				var d libcuda.Deviceptr
				if err := libcuda.MemAlloc(&d, 4096); err != nil {
					return err
				}
				return errors.Join(libcuda.MemFree(d), libcuda.MemFree(spare))
			})
		})
		sync.Postpone(func() { // a wait for the whole context: postponed
			postponedDuring.Store(int32(sync.CapturesInProgress()))
			postponed <- sync.Context(context.Background(), cu)
		})
		testenv.StillWaiting(t, "the busy stream's wait", waited)
		gt.Open()
		testenv.Recv(t, testenv.Go(wg.Wait), "the capturing goroutines")
		close(errs)
		for err := range errs {
			t.Errorf("work on another goroutine during the capture: %v", err)
		}
		return k.addOne.Launch(graphGrid, graphBlock, 0, s, buf, uint64(n))
	})
	testenv.Must(t, err)
	drained(t)
	if leased.get() != 1 {
		t.Errorf("the lease of the graph destroyed during the capture was released %d times, want once", leased.get())
	}
	select {
	case err := <-postponed:
		testenv.Must(t, err)
	default:
		t.Fatal("the postponed function did not run")
	}
	if n := postponedDuring.Load(); n != 0 {
		t.Errorf("the postponed function ran with %d captures in progress", n)
	}
	e, err := g.Instantiate()
	testenv.Must(t, err)
	testenv.Must(t, e.Launch(s))
	checkInts(t, "the graph captured meanwhile", s, buf, host, 3)
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
}

// Captures on several goroutines at once, in every mode, with leases,
// cached captures and executable graphs destroyed while others capture,
// next to goroutines that wait, copy and postpone work.
func TestConcurrentCapturesWithReleaseWork(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
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
		lanes[i] = lane{testenv.NewStream(t), testenv.NewStream(t), deviceInts(t, n), deviceInts(t, n), pinnedInts(t, n)}
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
				sync.Postpone(func() { postponed.Add(1) })
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
	testenv.OnPrimary(t, 0)
	const capturers = 3
	release := make(chan struct{})
	errs := make(chan error, capturers)
	var wg gosync.WaitGroup
	for range capturers {
		s := testenv.NewStream(t)
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
	for sync.CapturesInProgress() != capturers && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := sync.CapturesInProgress(); got != capturers {
		t.Errorf("InProgress() = %d during %d captures", got, capturers)
	}
	if got := sync.CapturesInProgress(); got < capturers {
		t.Errorf("sync.CapturesInProgress() = %d during %d captures", got, capturers)
	}
	close(release)
	testenv.Recv(t, testenv.Go(wg.Wait), "the capturing goroutines")
	close(errs)
	for err := range errs {
		testenv.Must(t, err)
	}
	noCaptureLeft(t)
}

// What a capture does not allow gives clear errors: waits through package
// sync on the capturing stream are refused without breaking the capture,
// and a capture of a stream already being captured is refused.
func TestOperationsNotAllowedInACaptureReturnClearErrors(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	s := testenv.NewStream(t)
	g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
		if err := k.fillAdd(s, buf, n, 4, 0); err != nil {
			return err
		}
		if err := sync.Stream(testenv.Context(t), 0, s); !errors.Is(err, sync.ErrCapturing) {
			return fmt.Errorf("a wait on the capturing stream = %v, want ErrCapturing", err)
		}
		if err := sync.Context(testenv.Context(t), cu); !errors.Is(err, sync.ErrCapturing) {
			return fmt.Errorf("a wait on the context = %v, want ErrCapturing", err)
		}
		_, err := graph.Capture(s, graph.DefaultMode, func(libcuda.Stream) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "cannot begin capturing") {
			return fmt.Errorf("a nested capture of the same stream = %v, want a refusal to begin", err)
		}
		t.Logf("nested capture: %v", err)
		return nil
	})
	testenv.Must(t, err)
	e, err := g.Instantiate()
	testenv.Must(t, err)
	testenv.Must(t, e.Launch(s))
	checkInts(t, "after the launch", s, buf, host, 4)
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	noCaptureLeft(t)
}
