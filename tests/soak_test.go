//go:build !gpu && linux

package tests

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
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

// The calls whose failures the soak injects, all with one code that
// nothing else returns, so that every error and every logged line can be
// traced to an injection.
var soakFaults = []string{"cuMemHostUnregister", "cuEventQuery", "cuThreadExchangeStreamCaptureMode", "cuStreamEndCapture"}

const soakCode = libcuda.CUDA_ERROR_UNKNOWN

// injected reports whether err comes from an injected fault.
func injected(err error) bool { return errors.Is(err, soakCode) }

// TestSoakReleasesUnderFaultsAndCancellation runs wrap/use/free cycles on 8
// goroutines beside 2 goroutines capturing in global mode, while about 1%
// of the cycles arm a failure of an unregister, an event query, a capture
// mode switch or an EndCapture, and about 1% cancel a wait. It must end
// with no crash or hang, no capture invalidated, every error and logged
// line an injected one, no registration left after Drain (but those kept
// after an injected failure) and the goroutines back to their baseline.
func TestSoakReleasesUnderFaultsAndCancellation(t *testing.T) {
	// By design the injected failures keep memory, events and graphs for good: the test runs in a child
	// process, which ends with them, so that the leak check after the
	// package's tests (testenv.Main) stays exact.
	if !testenv.InChild(t) {
		return
	}
	logged := testenv.CaptureErrors(t)
	cu := testenv.OnPrimary(t, 0)
	m := testenv.LoadKernels(t)
	addOne := testenv.Kernel(t, m, "add_one_i32")
	cycles := 100_000
	if testing.Short() {
		cycles = 10_000
	}
	const workers, capturers = 8, 2
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, 1<<20))
	defer func() { testenv.Must(t, libcuda.MemFree(dev)) }()
	memtest.Drain(t)
	defer hostmem.SetRetiredLimit(hostmem.SetRetiredLimit(128 << 10))
	before := hostmem.ReadStats()
	ranges := testenv.SimStat(t, "registered_ranges")
	invalidated := testenv.SimStat(t, "captures_invalidated")
	ctxSyncs := testenv.SimStat(t, "ctx_synchronize_calls")
	syncBefore := sync.ReadStats()
	goroutines := runtime.NumGoroutine()

	var stop atomic.Bool
	var captures, captureFaults, cycleFaults, armed, cancelled, cycled atomic.Int64
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
					switch {
					case errors.Is(err, graph.ErrInvalidated):
						return fmt.Errorf("capturer %d: %w", w, err)
					case injected(err):
						captureFaults.Add(1)
						if os.Getenv("SOAK_DEBUG") != "" {
							fmt.Fprintln(os.Stderr, "CAPTURE FAULT:", err)
						}
						continue
					case err != nil:
						return fmt.Errorf("capturer %d: %w", w, err)
					}
					captures.Add(1)
					if err := testenv.BoundedErr(t, "g.Destroy", g.Destroy); err != nil && !injected(err) {
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
				err := soakWorker(cu, dev, w, cycles/workers, &cycled, &cancelled, &cycleFaults)
				if err != nil {
					return fmt.Errorf("worker %d: %w", w, err)
				}
				return nil
			})
		}()
	}
	// Faults are armed from the test's goroutine: after a random number
	// of cycles, 100 on average, the next call of a random one of
	// soakFaults fails, on whatever goroutine makes it.
	workDone := make(chan struct{})
	go func() { work.Wait(); close(workDone) }()
	rng := rand.New(rand.NewPCG(14, 14))
	for next := int64(rng.IntN(200)); ; {
		select {
		case <-workDone:
		default:
			if cycled.Load() < next {
				runtime.Gosched()
				continue
			}
			testenv.SimFailNext(t, soakFaults[rng.IntN(len(soakFaults))], 1, soakCode)
			armed.Add(1)
			next += int64(1 + rng.IntN(200))
			continue
		}
		break
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for _, name := range soakFaults { // disarm what is left
		testenv.SimFailNext(t, name, 0, 0)
	}
	memtest.Drain(t)

	st := hostmem.ReadStats()
	ss := sync.ReadStats()
	t.Logf("cuCtxSynchronize calls %d; captures admitted beside one in flight %d; refused for a capture %d",
		testenv.SimStat(t, "ctx_synchronize_calls")-ctxSyncs, ss.CapturesBesideContextSyncs-syncBefore.CapturesBesideContextSyncs,
		ss.ContextSyncsRefused-syncBefore.ContextSyncsRefused)
	t.Logf("%d cycles, %d captures; %d faults armed, %d cycles and %d captures failed by them, %d waits cancelled; %d errors logged; %+v",
		cycles, captures.Load(), armed.Load(), cycleFaults.Load(), captureFaults.Load(), cancelled.Load(), len(logged.Messages()), st)
	if captures.Load() == 0 {
		t.Error("no capture ran")
	}
	if n := testenv.SimStat(t, "active_captures"); n != 0 {
		t.Errorf("simulator: %d captures active after the capturers stopped", n)
	}
	if n := testenv.SimStat(t, "captures_invalidated") - invalidated; n != 0 {
		t.Errorf("%d captures invalidated", n)
	}
	if st.Registrations != before.Registrations || st.Pending != 0 || st.Postponed != 0 {
		t.Errorf("after Drain: %+v, before %+v; want no registration but those kept", st, before)
	}
	if got, want := testenv.SimStat(t, "registered_ranges")-ranges, int64(st.Kept-before.Kept); got != want {
		t.Errorf("after Drain the simulator holds %d registrations more than before, hostmem keeps %d more", got, want)
	}
	for _, msg := range logged.Messages() {
		if !strings.Contains(msg, soakCode.Error()) && !strings.Contains(msg, "CUDA_ERROR_UNKNOWN") {
			t.Errorf("logged, not from an injected fault: %s", msg)
		}
	}
	if os.Getenv("SOAK_DEBUG") != "" {
		time.Sleep(3 * time.Second)
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
	}
	testenv.Eventually(t, "goroutines back to their baseline", func() bool { return runtime.NumGoroutine() <= goroutines })
	testenv.Eventually(t, "helpers idle", func() bool {
		s := sync.ReadStats()
		return s.ActiveHelpers == 0 && s.AbandonedHelpers == 0 && s.Captures == 0
	})
}

// soakWorker wraps, uses and frees n times on a stream of its own,
// cancelling a wait in about 1% of the cycles.
func soakWorker(cu libcuda.Context, dev libcuda.Deviceptr, w, n int, cycled, cancelled, faults *atomic.Int64) error {
	var s libcuda.Stream
	if err := libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
		return err
	}
	defer libcuda.StreamDestroy(s)
	rng := rand.New(rand.NewPCG(uint64(w), 14))
	slices := make([][]byte, 8)
	for i := range slices {
		slices[i] = make([]byte, 4096<<(i%5))
	}
	for i := range n {
		err := soakCycle(cu, dev, s, slices[i%len(slices)], rng, cancelled)
		cycled.Add(1)
		switch {
		case injected(err):
			faults.Add(1)
		case err != nil:
			return fmt.Errorf("cycle %d: %w", i, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	if err := sync.Stream(ctx, 0, s); err != nil && !injected(err) {
		return err
	}
	return nil
}

// soakCycle is one wrap/use/free, and sometimes a cancelled wait.
func soakCycle(cu libcuda.Context, dev libcuda.Deviceptr, s libcuda.Stream, mem []byte, rng *rand.Rand, cancelled *atomic.Int64) error {
	b, err := hostmem.Wrap(cu, mem)
	if err != nil {
		return err
	}
	err = libcuda.MemcpyHtoDAsync(dev, b.Pointer(), 4096, s)
	if err == nil {
		err = b.Use(s)
	}
	if ferr := b.Free(); err == nil {
		err = ferr
	}
	if err != nil || rng.IntN(100) != 0 {
		return err
	}
	cancelled.Add(1)
	ctx, cancel := context.WithCancel(context.Background())
	if rng.IntN(2) == 0 {
		cancel()
	}
	res := make(chan error, 2)
	go func() { res <- sync.Stream(ctx, 0, s) }()
	go func() { res <- hostmem.Wait(ctx) }()
	cancel()
	for range 2 {
		if err := <-res; err != nil && !errors.Is(err, context.Canceled) && !injected(err) {
			return err
		}
	}
	return nil
}
