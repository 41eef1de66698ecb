//go:build linux && (amd64 || arm64)

package libcuda

import (
	"bytes"
	"fmt"
	"runtime"
	"runtime/pprof"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/internal/dl"
)

// The pinned call path (internal/dl.CallPinned), against the C fixture:
// where the C code runs, how much stack it has, what sends it back through
// runtime.cgocall, and that it survives the collector, preemption signals
// and the profiler.

// frame1 is a call's argument block with room for the eight words the
// trampolines always read.
type frame1 struct {
	frame
	a [8]uintptr
}

// spOf runs abi_sp through the given call function and returns the
// address it reports.
func spOf(t *testing.T, fn uintptr, through func(*frame)) uintptr {
	t.Helper()
	f := frame1{frame: frame{fn: fn}}
	through(&f.frame)
	return f.r
}

func setPinned(t *testing.T, on bool) {
	was := dl.SetPinned(on)
	t.Cleanup(func() { dl.SetPinned(was) })
}

func TestCallPinnedRunsOnAStackOfItsOwn(t *testing.T) {
	setPinned(t, true)
	fn := mustSym(t, abiLibrary(t), "abi_sp")
	// The first pinned call on a P without a stack goes through cgocall
	// and makes one; lock the thread so that the same P is likely to come
	// back (a few calls, in case the goroutine moves).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	onPinned := 0
	for range 8 {
		if dl.OnPinnedStack(spOf(t, fn, callPinned)) {
			onPinned++
		}
	}
	if onPinned == 0 {
		t.Fatalf("no pinned call of 8 ran on a pinned stack (%d stacks made)", dl.PinnedStacks())
	}
	if sp := spOf(t, fn, call); dl.OnPinnedStack(sp) {
		t.Errorf("a plain call ran on a pinned stack (%#x)", sp)
	}
	dl.SetPinned(false)
	if sp := spOf(t, fn, callPinned); dl.OnPinnedStack(sp) {
		t.Errorf("with pinned calls off, a pinned call ran on a pinned stack (%#x)", sp)
	}
}

func TestCallPinnedHasRoomForDeepCStacks(t *testing.T) {
	setPinned(t, true)
	fn := mustSym(t, abiLibrary(t), "abi_stack")
	const kib = 768 // of the 1 MiB stack
	for i := range 4 {
		f := frame1{frame: frame{fn: fn, n: 1}}
		f.a[0] = kib
		callPinned(&f.frame)
		if got := int32(f.r); got != kib {
			t.Fatalf("call %d: abi_stack(%d) = %d", i, kib, got)
		}
	}
}

func TestCallFenceInFlightSendsPinnedCallsThroughCgocall(t *testing.T) {
	setPinned(t, true)
	lib := abiLibrary(t)
	sp, wait := mustSym(t, lib, "abi_sp"), mustSym(t, lib, "abi_wait_flag")
	runtime.LockOSThread()
	for range 4 { // a stack for this P
		spOf(t, sp, callPinned)
	}
	runtime.UnlockOSThread()

	flag := new(int32)
	entered := make(chan struct{})
	done := make(chan int32)
	go func() {
		f := frame1{frame: frame{fn: wait, n: 2}}
		f.a[0] = uintptr(unsafe.Pointer(flag))
		f.a[1] = 1 << 36 // some seconds of checks at most
		close(entered)
		callFence(&f.frame)
		done <- int32(f.r)
	}()
	waitFor(t, entered, "the goroutine to enter the fence")
	// The fence counts itself before its call: once the goroutine has
	// entered it, every pinned call below takes cgocall.
	deadline := time.Now().Add(5 * time.Second)
	for dl.FencesInFlight() == 0 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if dl.FencesInFlight() == 0 {
		t.Fatal("the fence did not count itself in flight")
	}
	for i := range 16 {
		if a := spOf(t, sp, callPinned); dl.OnPinnedStack(a) {
			t.Fatalf("pinned call %d ran pinned while a fence was in flight", i)
		}
	}
	atomic.StoreInt32(flag, 1)
	select {
	case r := <-done:
		if r != 0 {
			t.Fatal("the fence's C function gave up before the flag was set")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the fence did not return")
	}
	if n := dl.FencesInFlight(); n != 0 {
		t.Fatalf("%d fences in flight after the fence returned", n)
	}
}

// Pinned calls hold their P: the collector's stops, preemption requests
// and the profiler's signals meet goroutines inside C code on a stack the
// runtime does not know. Many such calls, each long enough to be
// interrupted, on every P at once, beside a loop of collections and a CPU
// profile, must all return their right answers.
func TestCallPinnedBesideTheCollectorPreemptionAndTheProfiler(t *testing.T) {
	setPinned(t, true)
	lib := abiLibrary(t)
	spin, args := mustSym(t, lib, "abi_spin"), mustSym(t, lib, "abi_args")
	var prof bytes.Buffer
	if err := pprof.StartCPUProfile(&prof); err == nil {
		defer pprof.StopCPUProfile()
	}
	stop := make(chan struct{})
	var gcs atomic.Int32
	var wg gosync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
				gcs.Add(1)
			}
		}
	}()
	calls := 200
	if testing.Short() {
		calls = 50
	}
	workers := 2 * runtime.GOMAXPROCS(0)
	errs := make(chan string, workers)
	var cwg gosync.WaitGroup
	for w := range workers {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			junk := make([][]byte, 0, 64)
			for i := range calls {
				f := frame1{frame: frame{fn: spin, n: 1}}
				f.a[0] = 200000 // tens to hundreds of microseconds in C
				callPinned(&f.frame)
				var g struct {
					frame
					a [maxArgWords]uintptr
				}
				g.fn, g.n = args, 9
				g.a[0] = 8
				for j := 1; j <= 8; j++ {
					g.a[j] = 0x1000 + uintptr(j)
				}
				callPinned(&g.frame)
				if g.r != 0 {
					errs <- fmt.Sprintf("worker %d, call %d: abi_args saw argument %d wrong", w, i, g.r)
					return
				}
				junk = append(junk[:i%64], make([]byte, 1<<10)) // garbage for the collector
			}
		}()
	}
	waitFor(t, waitGroup(&cwg), "the pinned callers")
	close(stop)
	waitFor(t, waitGroup(&wg), "the collector's helpers")
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if gcs.Load() == 0 {
		t.Error("no collection ran beside the calls")
	}
	t.Logf("%d workers x %d calls beside %d collections", workers, calls, gcs.Load())
}

// BenchmarkCallPath is one call of a C function that returns at once,
// through runtime.cgocall and as a pinned call.
func BenchmarkCallPath(b *testing.B) {
	fn := mustSym(b, abiLibrary(b), "abi_negative")
	for _, way := range []struct {
		name    string
		through func(*frame)
	}{{"cgocall", call}, {"pinned", callPinned}} {
		b.Run(way.name, func(b *testing.B) {
			was := dl.SetPinned(true)
			defer dl.SetPinned(was)
			f := frame1{frame: frame{fn: fn, n: 1}}
			for b.Loop() {
				way.through(&f.frame)
			}
		})
	}
}

func TestCallQueuedIsPinnedOnlyWhenAskedFor(t *testing.T) {
	setPinned(t, true)
	fn := mustSym(t, abiLibrary(t), "abi_sp")
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for range 4 { // a stack for this P
		spOf(t, fn, callPinned)
	}
	was := PinQueued(false)
	defer PinQueued(was)
	for i := range 8 {
		if sp := spOf(t, fn, callQueued); dl.OnPinnedStack(sp) {
			t.Fatalf("queued call %d ran pinned without PinQueued", i)
		}
	}
	PinQueued(true)
	onPinned := 0
	for range 8 {
		if dl.OnPinnedStack(spOf(t, fn, callQueued)) {
			onPinned++
		}
	}
	if onPinned == 0 {
		t.Fatal("no queued call of 8 ran pinned with PinQueued(true)")
	}
}

// waitFor waits for ch to be closed, or fails t after a minute with every
// goroutine's stack. (This package's tests cannot use internal/testenv,
// which imports it.)
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		buf := make([]byte, 1<<20)
		t.Fatalf("gave up after a minute waiting for %s; every goroutine:\n%s", what, buf[:runtime.Stack(buf, true)])
	}
}

// waitGroup returns a channel closed when wg's count is 0.
func waitGroup(wg *gosync.WaitGroup) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		wg.Wait()
		close(ch)
	}()
	return ch
}
