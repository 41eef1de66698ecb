//go:build !gpu

package hostmem_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

func drainOnly(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	testenv.Must(t, hostmem.Drain(ctx))
}

func waitReleases(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	testenv.MustBounded(t, "hostmem.Wait", func() error { return hostmem.Wait(ctx) })
}

func deviceMemory(t *testing.T) libcuda.Deviceptr {
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, 64))
	testenv.Fenced(t, func() { testenv.Must(t, libcuda.MemFree(dev)) })
	return dev
}

func memset(dev libcuda.Deviceptr) func(libcuda.Stream) error {
	return func(s libcuda.Stream) error { return libcuda.MemsetD8Async(dev, 7, 64, s) }
}

// Free of a buffer never used on a stream, while a stream is busy, makes
// the release wait for the whole context; captures on other streams begin
// and end meanwhile, valid, beside that wait's cuCtxSynchronize blocked in
// the driver, and the release ends once the busy stream is let go.
func TestFreeNeverUsedWhileBusyLetsCapturesRun(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	dev := deviceMemory(t)
	busy := testenv.NewStream(t)
	const captures = 4
	// One stream per capture: two captures of one stream at once would
	// refuse each other (CUDA_ERROR_ILLEGAL_STATE), whatever hostmem does.
	var streams [captures]libcuda.Stream
	for i := range streams {
		streams[i] = testenv.NewStream(t)
	}
	gate := testenv.NewGate(t)
	gate.Hold(t, busy)
	b, err := hostmem.Wrap(cu, make([]byte, 4096))
	testenv.Must(t, err)
	testenv.MustBounded(t, "b.Free", b.Free)
	testenv.Eventually(t, "the context wait in flight", func() bool {
		st := sync.ReadStats()
		return st.ContextSyncs == 1 && st.BlockingHelpers == 1
	})
	invalidated := testenv.SimStat(t, "captures_invalidated")
	before := sync.ReadStats()
	done := make(chan error, captures)
	for _, s := range streams {
		go func() {
			g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, memset(dev))
			if err == nil {
				err = g.Destroy()
			}
			done <- err
		}()
	}
	for range captures {
		if err := testenv.Recv(t, done, "a capture beside the release's context wait"); err != nil {
			t.Fatalf("capture beside the release's context wait: %v", err)
		}
	}
	after := sync.ReadStats()
	if after.ContextSyncs != 1 {
		t.Fatalf("%d context synchronizes in flight after the captures, want the release's 1 (the busy stream is held)", after.ContextSyncs)
	}
	if n := after.CapturesBesideContextSyncs - before.CapturesBesideContextSyncs; n != captures {
		t.Errorf("%d captures admitted beside the context synchronize, want %d", n, captures)
	}
	if w := after.CaptureWakeups - before.CaptureWakeups; w > 4*captures {
		t.Errorf("%d capture starts woke %d times while waiting for the call's entry bound", captures, w)
	}
	if p := hostmem.ReadStats().Pending; p != 1 {
		t.Fatalf("%d releases pending while the busy stream is held, want 1", p)
	}
	gate.Open()
	waitReleases(t)
	if n := testenv.SimStat(t, "captures_invalidated") - invalidated; n != 0 {
		t.Fatalf("%d captures invalidated", n)
	}
	drainOnly(t)
}

// The releases of a context that need a context-wide wait share one
// wait: a thousand of them make a handful of synchronizes and goroutines.
func TestContextWideReleasesShareOneWait(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	busy := testenv.NewStream(t)
	gate := testenv.NewGate(t)
	gate.Hold(t, busy)
	drainOnly(t)
	base := runtime.NumGoroutine()
	syncs := testenv.SimStat(t, "ctx_synchronize_calls")
	mem := make([]byte, 64<<10)
	const n = 1000
	peak := 0
	for i := range n {
		b, err := hostmem.Wrap(cu, mem[i%16*4096:][:4096])
		testenv.Must(t, err)
		testenv.MustBounded(t, "b.Free", b.Free)
		peak = max(peak, runtime.NumGoroutine()-base)
	}
	if p := hostmem.ReadStats().Pending; p != n {
		t.Fatalf("%d releases pending behind the busy stream, want %d", p, n)
	}
	gate.Open()
	waitReleases(t)
	got := testenv.SimStat(t, "ctx_synchronize_calls") - syncs
	t.Logf("%d context-wide releases: %d synchronizes, at most %d goroutines more", n, got, peak)
	if got > 4 {
		t.Fatalf("%d context-wide releases made %d synchronizes; want them to share a few", n, got)
	}
	if peak > 8 {
		t.Fatalf("%d context-wide releases started up to %d goroutines", n, peak)
	}
	drainOnly(t)
}

// Drain returns at its context's end while an unregister is in progress
// (it fences behind work that has not finished), and works once the
// work is done.
func TestDrainReturnsAtItsDeadlineDuringAnUnregister(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	drainOnly(t)
	s := testenv.NewStream(t)
	b, err := hostmem.Wrap(cu, make([]byte, 8192))
	testenv.Must(t, err)
	testenv.Must(t, b.Use(s))
	testenv.MustBounded(t, "b.Free", b.Free)
	waitReleases(t)
	busy := testenv.NewStream(t)
	gate := testenv.NewGate(t)
	gate.Hold(t, busy)
	unregs := testenv.SimStat(t, "unregister_calls")
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- hostmem.Drain(ctx) }()
	testenv.Eventually(t, "the unregister in flight", func() bool { return testenv.SimStat(t, "unregister_calls") > unregs })
	cancel()
	if err := testenv.Recv(t, res, "Drain cancelled during an unregister"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Drain cancelled during an unregister: %v", err)
	}
	gate.Open()
	drainOnly(t)
	if st := hostmem.ReadStats(); st.Registrations != 0 || st.Pending != 0 {
		t.Fatalf("after the unregister: %+v", st)
	}
}

// Wait returns at its context's end while releases wait for the GPU.
func TestWaitReturnsAtItsDeadline(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	gate := testenv.NewGate(t)
	gate.Hold(t, s)
	b, err := hostmem.Wrap(cu, make([]byte, 8192))
	testenv.Must(t, err)
	testenv.Must(t, b.Use(s))
	testenv.MustBounded(t, "b.Free", b.Free)
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- hostmem.Wait(ctx) }()
	cancel()
	if err := testenv.Recv(t, res, "a cancelled Wait"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Wait: %v", err)
	}
	gate.Open()
	drainOnly(t)
}

// A failed mode switch on a helper thread is logged once; the releases
// that need it, and those after, all end.
func TestFailedModeSwitchLeavesReleasesWorking(t *testing.T) {
	errs := testenv.CaptureErrors(t)
	cu := testenv.OnPrimary(t, 0)
	drainOnly(t)
	testenv.Eventually(t, "idle helpers to exit", func() bool { return sync.ReadStats().HelperThreads == 0 })
	before := hostmem.ReadStats()
	busy := testenv.NewStream(t)
	gate := testenv.NewGate(t)
	gate.Hold(t, busy)
	var bufs []*hostmem.Buffer
	mem := make([]byte, 50*4096)
	for i := range 50 {
		b, err := hostmem.Wrap(cu, mem[i*4096:][:4096])
		testenv.Must(t, err)
		bufs = append(bufs, b)
	}
	testenv.SimFailNext(t, "cuThreadExchangeStreamCaptureMode", 1, libcuda.CUDA_ERROR_UNKNOWN)
	for _, b := range bufs { // never used: each waits for the context, on a helper
		testenv.MustBounded(t, "b.Free", b.Free)
	}
	testenv.Eventually(t, "the failure logged", func() bool { return len(errs.Messages()) == 1 })
	gate.Open()
	waitReleases(t)
	for range 50 {
		b, err := hostmem.Wrap(cu, mem[:4096])
		testenv.Must(t, err)
		testenv.MustBounded(t, "b.Free", b.Free)
	}
	waitReleases(t)
	if st := hostmem.ReadStats(); st.Failures != before.Failures || st.Kept != before.Kept {
		t.Fatalf("after the failed mode switch: %+v, before %+v; want no release failed", st, before)
	}
	if m := errs.Messages(); len(m) != 1 {
		t.Fatalf("logged %q; want the failed switch once", m)
	}
	drainOnly(t)
}

// A failed event query fails that release alone, logged once, with its
// memory and its event kept (issue 23 item 10); later releases end.
func TestFailedEventQueryKeepsOnlyThatMemory(t *testing.T) {
	// By design the failed release keeps its memory registered and its event for good: the test runs in a child
	// process, which ends with them, so that the leak check after the
	// package's tests (testenv.Main) stays exact.
	if !testenv.InChild(t) {
		return
	}
	errs := testenv.CaptureErrors(t)
	cu := testenv.OnPrimary(t, 0)
	drainOnly(t)
	before := hostmem.ReadStats()
	events := testenv.SimStat(t, "live_events")
	s := testenv.NewStream(t)
	gate := testenv.NewGate(t)
	gate.Hold(t, s)
	b, err := hostmem.Wrap(cu, make([]byte, 8192))
	testenv.Must(t, err)
	testenv.Must(t, b.Use(s))
	testenv.SimFailNext(t, "cuEventQuery", 1, libcuda.CUDA_ERROR_UNKNOWN)
	testenv.MustBounded(t, "b.Free", b.Free)
	waitReleases(t)
	gate.Open()
	// Later uses take events from the pool: the failed use's event, kept
	// with its memory (the GPU may still signal it), must not be among
	// them, nor be destroyed, not even by Drain, which destroys the pooled
	// ones.
	s2 := testenv.NewStream(t)
	for range 50 {
		b, err := hostmem.Wrap(cu, make([]byte, 4096))
		testenv.Must(t, err)
		testenv.Must(t, b.Use(s2))
		testenv.MustBounded(t, "b.Free", b.Free)
	}
	drainOnly(t)
	st := hostmem.ReadStats()
	if st.Failures != before.Failures+1 || st.Kept != before.Kept+1 || st.Registrations != 0 {
		t.Fatalf("after one failed query: %+v, before %+v; want that one release kept", st, before)
	}
	if n := testenv.SimStat(t, "live_events") - events; n != 1 {
		t.Fatalf("%d events alive after Drain, want the failed use's 1 kept", n)
	}
	if m := errs.Messages(); len(m) != 1 {
		t.Fatalf("logged %q; want the failure once", m)
	}
}

// deadContextSetup starts a test of contexts made and destroyed on the
// test goroutine's thread, locked until the test ends: nothing may be
// logged at error level, nothing is pending. It returns device 0 and the
// stats to compare with.
func deadContextSetup(t *testing.T) (libcuda.Device, hostmem.Stats) {
	t.Helper()
	testenv.NoErrorsLogged(t)
	testenv.PrimaryContext(t, 0)
	drainOnly(t)
	var dev libcuda.Device
	testenv.Must(t, libcuda.DeviceGet(&dev, 0))
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	return dev, hostmem.ReadStats()
}

// retiredInADestroyedContext wraps mem in a new context, uses it on a
// stream there, frees it and waits for its release, so that its
// registration is retired, and destroys the context (the driver drops the
// registration with it). The calling thread must be locked.
func retiredInADestroyedContext(t *testing.T, dev libcuda.Device, mem []byte) {
	t.Helper()
	var cu libcuda.Context
	testenv.Must(t, libcuda.CtxCreate(&cu, nil, 0, dev))
	var s libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	b, err := hostmem.Wrap(cu, mem)
	testenv.Must(t, err)
	testenv.Must(t, libcuda.MemsetD8Async(b.DevicePtr(), 1, uint64(len(mem)), s))
	testenv.Must(t, b.Use(s))
	testenv.MustBounded(t, "b.Free", b.Free)
	waitReleases(t)
	if st := hostmem.ReadStats(); st.Retired != 1 {
		t.Fatalf("before the context's destruction: %+v; want its registration retired", st)
	}
	testenv.Must(t, libcuda.StreamDestroy(s))
	testenv.Must(t, libcuda.CtxDestroy(cu))
}

// A context destroyed after its releases ended took its registration with
// it (issue 23 item 4): a wrap of the same memory in a new context does
// not reuse the dead registration but registers anew, and works there;
// the dead one is let go, unpinned, with no failure and nothing logged,
// and Drain leaves nothing registered or kept.
func TestWrapAfterTheContextIsDestroyedRegistersAnew(t *testing.T) {
	dev, before := deadContextSetup(t)
	mem := make([]byte, 8192)
	retiredInADestroyedContext(t, dev, mem)

	var cu2 libcuda.Context
	testenv.Must(t, libcuda.CtxCreate(&cu2, nil, 0, dev))
	defer func() { testenv.Must(t, libcuda.CtxDestroy(cu2)) }()
	regs := testenv.SimStat(t, "register_calls")
	b2, err := hostmem.Wrap(cu2, mem)
	testenv.Must(t, err)
	if testenv.SimStat(t, "register_calls") == regs {
		t.Fatal("the wrap in the new context reused the registration of the destroyed one")
	}
	var s2 libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&s2, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	testenv.Must(t, libcuda.MemsetD8Async(b2.DevicePtr(), 2, uint64(len(mem)), s2))
	testenv.Must(t, b2.Use(s2))
	testenv.MustBounded(t, "b2.Free", b2.Free)
	drainOnly(t)
	testenv.Must(t, libcuda.StreamDestroy(s2))
	if mem[0] != 2 || mem[len(mem)-1] != 2 {
		t.Fatalf("the new context's memset did not reach the memory: %d %d", mem[0], mem[len(mem)-1])
	}
	st := hostmem.ReadStats()
	if st.Registrations != 0 || st.Kept != before.Kept || st.Failures != before.Failures || st.Dropped != before.Dropped+1 {
		t.Fatalf("after Drain: %+v, before %+v; want nothing registered or kept, no failure, the dead registration dropped", st, before)
	}
}

// Drain after the context of a retired registration was destroyed: the
// registration went with its context, so there is nothing to unregister;
// Drain succeeds, nothing is kept pinned or logged.
func TestDrainAfterTheContextIsDestroyedKeepsNothing(t *testing.T) {
	dev, before := deadContextSetup(t)
	retiredInADestroyedContext(t, dev, make([]byte, 8192))
	drainOnly(t)
	st := hostmem.ReadStats()
	if st.Registrations != 0 || st.Kept != before.Kept || st.Failures != before.Failures || st.Dropped != before.Dropped+1 {
		t.Fatalf("after Drain: %+v, before %+v; want nothing registered or kept, no failure, the dead registration dropped", st, before)
	}
}

// A failed cuStreamEndCapture still ends the capture: a release postponed
// behind it runs.
func TestReleasePostponedBehindAFailedEndCaptureEnds(t *testing.T) {
	errs := testenv.CaptureErrors(t)
	cu := testenv.OnPrimary(t, 0)
	drainOnly(t)
	s := testenv.NewStream(t)
	dev := deviceMemory(t)
	testenv.SimFailNext(t, "cuStreamEndCapture", 1, libcuda.CUDA_ERROR_UNKNOWN)
	_, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
		b, err := hostmem.Wrap(cu, make([]byte, 4096))
		if err != nil {
			return err
		}
		if err := testenv.BoundedErr(t, "b.Free", b.Free); err != nil { // never used: waits for the context, postponed
			return err
		}
		testenv.Eventually(t, "the release postponed", func() bool { return hostmem.ReadStats().Postponed == 1 })
		return memset(dev)(s)
	})
	if !errors.Is(err, libcuda.CUDA_ERROR_UNKNOWN) {
		t.Fatalf("capture: %v, want the injected failure", err)
	}
	waitReleases(t)
	if st := hostmem.ReadStats(); st.Postponed != 0 || st.Pending != 0 {
		t.Fatalf("after the failed end: %+v", st)
	}
	if m := errs.Messages(); len(m) != 1 {
		t.Fatalf("logged %q; want the failed end once", m)
	}
	drainOnly(t)
}

// A failed context-wide wait fails every release that shared it, logged
// once; the memory stays pinned, and later releases of the context end.
func TestFailedContextWaitIsLoggedOnceForAllItsReleases(t *testing.T) {
	// By design the failed releases keep their memory registered for good: the test runs in a child
	// process, which ends with them, so that the leak check after the
	// package's tests (testenv.Main) stays exact.
	if !testenv.InChild(t) {
		return
	}
	errs := testenv.CaptureErrors(t)
	cu := testenv.OnPrimary(t, 0)
	drainOnly(t)
	before := hostmem.ReadStats()
	const n = 10
	leave := sync.StartCapture().End // the context waits are postponed meanwhile
	mem := make([]byte, n*4096)
	for i := range n {
		b, err := hostmem.Wrap(cu, mem[i*4096:][:4096])
		testenv.Must(t, err)
		testenv.MustBounded(t, "b.Free", b.Free) // never used: waits for the context
	}
	testenv.Eventually(t, "the releases postponed", func() bool { return hostmem.ReadStats().Postponed == n })
	testenv.SimFailNext(t, "cuCtxSynchronize", 1, libcuda.CUDA_ERROR_UNKNOWN)
	leave()
	waitReleases(t)
	st := hostmem.ReadStats()
	if st.Failures != before.Failures+n || st.Kept != before.Kept+n {
		t.Fatalf("after the failed context wait: %+v, before %+v; want %d releases failed and kept", st, before, n)
	}
	if m := errs.Messages(); len(m) != 1 {
		t.Fatalf("logged %q; want the failed wait once", m)
	}
	b, err := hostmem.Wrap(cu, make([]byte, 4096))
	testenv.Must(t, err)
	testenv.MustBounded(t, "b.Free", b.Free)
	waitReleases(t)
	if st := hostmem.ReadStats(); st.Failures != before.Failures+n {
		t.Fatalf("a later release failed too: %+v", st)
	}
	drainOnly(t)
}
