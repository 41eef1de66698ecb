package tests

import (
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// TestHostmemStressWithGlobalCaptures runs wrap/use/free cycles on several
// goroutines while others capture graphs in global mode, the strictest:
// no capture may be invalidated, nothing logged, no registration left after
// Drain, goroutines and threads bounded. It is a test, not a timing.
func TestHostmemStressWithGlobalCaptures(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	m := testenv.LoadKernels(t)
	addOne := testenv.Kernel(t, m, "add_one_i32")
	cycles := stressCycles
	if testing.Short() {
		cycles /= 10
	}
	const workers, capturers = 4, 2
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, 1<<20))
	defer func() { testenv.Must(t, libcuda.MemFree(dev)) }()

	// A small budget of retired bytes, so that batches unregister memory
	// while the captures run: the call that global captures refuse.
	defer hostmem.SetRetiredLimit(hostmem.SetRetiredLimit(128 << 10))
	unregsBefore := hostmem.ReadStats().Unregisters
	goroutines := runtime.NumGoroutine()
	threads := pprof.Lookup("threadcreate").Count()
	var stop atomic.Bool
	var captures, cycled atomic.Int64
	errs := make(chan error, workers+capturers)
	var wg gosync.WaitGroup
	for w := range capturers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- libcuda.WithContext(cu, func() error {
				var s libcuda.Stream
				if err := libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
					return err
				}
				defer libcuda.StreamDestroy(s)
				for !stop.Load() {
					g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
						return addOne.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 64}, 0, s, dev, uint64(64))
					})
					if err != nil {
						return fmt.Errorf("capturer %d: %w", w, err)
					}
					captures.Add(1)
					if err := testenv.BoundedErr(t, "g.Destroy", g.Destroy); err != nil {
						return err
					}
				}
				return nil
			})
		}()
	}
	var work gosync.WaitGroup
	for w := range workers {
		work.Add(1)
		go func() {
			defer work.Done()
			errs <- libcuda.WithContext(cu, func() error {
				var s libcuda.Stream
				if err := libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
					return err
				}
				// A few slices wrapped over and over: the releases of one
				// cycle overlap the wraps of the next.
				slices := make([][]byte, 8)
				for i := range slices {
					slices[i] = make([]byte, 4096<<(i%5))
				}
				for i := range cycles / workers {
					b, err := hostmem.Wrap(cu, slices[i%len(slices)])
					if err != nil {
						return fmt.Errorf("worker %d cycle %d: %w", w, i, err)
					}
					if err := libcuda.MemcpyHtoDAsync(dev, b.Pointer(), 4096, s); err != nil {
						return err
					}
					if err := b.Use(s); err != nil {
						return err
					}
					if err := testenv.BoundedErr(t, "b.Free", b.Free); err != nil {
						return err
					}
					cycled.Add(1)
				}
				// Captures run on: wait in a way that cannot break them.
				if err := sync.Stream(context.Background(), 0, s); err != nil {
					return err
				}
				return libcuda.StreamDestroy(s)
			})
		}()
	}
	// Bounded, with room for a loaded machine: the cycles take seconds.
	select {
	case <-testenv.Go(work.Wait):
	case <-time.After(5 * time.Minute):
		t.Fatalf("the workers did not finish %d cycles in 5 minutes", cycles)
	}
	unregsDuring := hostmem.ReadStats().Unregisters - unregsBefore // captures still run
	stop.Store(true)
	testenv.Recv(t, testenv.Go(wg.Wait), "the capturing goroutines")
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if captures.Load() == 0 {
		t.Error("no capture ran during the cycles")
	}
	if unregsDuring == 0 {
		t.Error("no registration was unregistered while the captures ran")
	}
	memtest.Drain(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for runtime.NumGoroutine() > goroutines+2 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	st := hostmem.ReadStats()
	grownThreads := pprof.Lookup("threadcreate").Count() - threads
	t.Logf("%d wrap/use/free cycles, %d global captures, none invalidated; %d registers, %d unregisters (%d during the captures); goroutines %d -> %d, %d new OS threads",
		cycled.Load(), captures.Load(), st.Registers, st.Unregisters, unregsDuring, goroutines, runtime.NumGoroutine(), grownThreads)
	if n := runtime.NumGoroutine(); n > goroutines+2 {
		t.Errorf("%d goroutines left, %d before", n, goroutines)
	}
	if limit := 64 + 2*runtime.GOMAXPROCS(0); grownThreads > limit {
		t.Errorf("%d new OS threads, more than %d", grownThreads, limit)
	}
}
