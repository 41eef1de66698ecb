package hostmem_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
	"github.com/purecuda/purecuda/libcuda"
)

// DESIGN.md's eight scenarios of the release logic, and hostmem's bad
// inputs. Each scenario also checks that nothing was logged at error level.

// settlesAtPending waits until at most want releases are pending, gives
// the reaper time to finish more than it should, and fails t unless
// exactly want are.
func settlesAtPending(t testing.TB, want int, what string) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("%d releases pending or fewer", want), func() bool { return hostmem.ReadStats().Pending <= want })
	time.Sleep(20 * time.Millisecond)
	if st := hostmem.ReadStats(); st.Pending != want {
		t.Fatalf("%s: %+v; want %d releases pending", what, st, want)
	}
}

func TestWrapPartlyOverlappingRetiredMemoryRegistersTheRest(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	memtest.Drain(t)
	v := make([]byte, 64<<10)
	a, err := hostmem.Wrap(cu, v[:40<<10])
	testenv.Must(t, err)
	testenv.Must(t, a.Use(testenv.NewStream(t))) // tracked: its release retires, not unregisters
	testenv.MustBounded(t, "a.Free", a.Free)
	testenv.Eventually(t, "released", func() bool { return hostmem.ReadStats().Pending == 0 })
	before := hostmem.ReadStats()
	if before.Retired != 1 || before.Registrations != 1 {
		t.Fatalf("after the release: %+v; want one retired registration", before)
	}
	b, err := hostmem.Wrap(cu, v[20<<10:])
	if err != nil {
		t.Fatalf("wrap overlapping a retired registration: %v", err)
	}
	if st := hostmem.ReadStats(); st.Registers != before.Registers+1 || st.Unregisters != before.Unregisters || st.Registrations != 2 {
		t.Fatalf("after the overlapping wrap: %+v, before %+v; want the rest registered beside the retired one", st, before)
	}
	if b.DevicePtr() != libcuda.Deviceptr(uintptr(unsafe.Pointer(&v[20<<10]))) {
		t.Errorf("device pointer %#x is not the host address", b.DevicePtr())
	}
	testenv.MustBounded(t, "b.Free", b.Free)
	memtest.Drain(t)
}

func TestHostmemBadInputs(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	if _, err := hostmem.Wrap(0, make([]byte, 10)); !errors.Is(err, hostmem.ErrNoContext) {
		t.Errorf("wrap without a context: %v", err)
	}
	if _, err := hostmem.Wrap[byte](cu, nil); !errors.Is(err, hostmem.ErrEmpty) {
		t.Errorf("wrap of nil: %v", err)
	}
	if _, err := hostmem.Wrap(cu, []struct{}{{}, {}}); !errors.Is(err, hostmem.ErrEmpty) {
		t.Errorf("wrap of zero-size elements: %v", err)
	}
	if _, err := hostmem.Alloc(cu, 0); !errors.Is(err, hostmem.ErrEmpty) {
		t.Errorf("alloc of 0 bytes: %v", err)
	}
	b, err := hostmem.Wrap(cu, make([]float32, 100))
	testenv.Must(t, err)
	s := testenv.NewStream(t)
	testenv.Must(t, b.Use(s))
	testenv.MustBounded(t, "b.Free", b.Free)
	if err := testenv.BoundedErr(t, "b.Free", b.Free); err != nil {
		t.Errorf("second Free: %v", err)
	}
	if err := b.Use(s); !errors.Is(err, hostmem.ErrFreed) {
		t.Errorf("Use after Free: %v", err)
	}
	if b.DevicePtr() != 0 {
		t.Error("DevicePtr after Free is not 0")
	}
	a, err := hostmem.Alloc(cu, 1<<20)
	testenv.Must(t, err)
	if a.DevicePtr() == 0 || a.Size() != 1<<20 {
		t.Errorf("Alloc: device pointer %#x, size %d", a.DevicePtr(), a.Size())
	}
	testenv.MustBounded(t, "a.Free", a.Free)
	memtest.Drain(t)
}

func TestHostmemContextDestroyedWithWrapPendingLetsTheMemoryGo(t *testing.T) {
	errs := testenv.CaptureErrors(t)
	testenv.PrimaryContext(t, 0)  // initialises the driver
	before := hostmem.ReadStats() // other tests may have kept memory for good
	var dev libcuda.Device
	testenv.Must(t, libcuda.DeviceGet(&dev, 0))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cu libcuda.Context
	testenv.Must(t, libcuda.CtxCreate(&cu, nil, 0, dev))
	b, err := hostmem.Wrap(cu, make([]int64, 1024))
	testenv.Must(t, err)
	var s libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	testenv.Must(t, b.Use(s))
	testenv.Must(t, libcuda.StreamDestroy(s))
	testenv.Must(t, libcuda.CtxDestroy(cu))
	testenv.MustBounded(t, "b.Free", b.Free)
	// A wrap in the destroyed context is refused, not served from what
	// hostmem knew of the context.
	if c, err := hostmem.Wrap(cu, make([]byte, 4096)); err == nil {
		testenv.MustBounded(t, "c.Free", c.Free)
		t.Fatal("Wrap in a destroyed context succeeded")
	} else {
		t.Logf("Wrap in the destroyed context: %v", err)
	}
	memtest.DrainReleases(t)
	// The release neither queries nor destroys the use's event, which the
	// driver destroyed with the context (on the H200 a cuEventQuery of it
	// crashed the process): nothing fails, nothing is logged. The
	// registration went with its context, and nothing stays pinned
	// (issue 23 item 4).
	st := hostmem.ReadStats()
	if st.Failures != before.Failures || len(errs.Messages()) != 0 {
		t.Fatalf("release in a destroyed context: %+v, before %+v, logged %q; want no failure, nothing logged", st, before, errs.Messages())
	}
	if st.Kept != before.Kept || st.Registrations != 0 || st.Dropped != before.Dropped+1 {
		t.Fatalf("after the release in a destroyed context: %+v, before %+v; want its registration dropped with the context, nothing kept", st, before)
	}
}

// The events and registrations of a release outlive the user's hold on a
// primary context: hostmem holds it until the release has ended.
func TestReleaseOutlivesTheUsersPrimaryContext(t *testing.T) {
	testenv.NoErrorsLogged(t)
	dev := lastDevice(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cu libcuda.Context
	testenv.Must(t, libcuda.DevicePrimaryCtxRetain(&cu, dev)) // the program's only hold
	testenv.Must(t, libcuda.CtxSetCurrent(cu))
	defer func() { testenv.Must(t, libcuda.CtxSetCurrent(0)) }()
	// A gate made here, not with newGate: its memory must be freed while
	// hostmem still holds the context.
	var word unsafe.Pointer
	testenv.Must(t, libcuda.MemHostAlloc(&word, 64, uint32(libcuda.CU_MEMHOSTALLOC_DEVICEMAP)))
	freed := false
	open := func() {
		if !freed {
			atomic.StoreUint32((*uint32)(word), 1)
		}
	}
	atomic.StoreUint32((*uint32)(word), 0)
	defer open() // a failing test must not leave the stream held
	var dword libcuda.Deviceptr
	testenv.Must(t, libcuda.MemHostGetDevicePointer(&dword, word, 0))
	var s libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	b, err := hostmem.Wrap(cu, make([]int64, 1<<12))
	testenv.Must(t, err)
	testenv.Must(t, libcuda.StreamWaitValue32(s, dword, 1, uint32(libcuda.CU_STREAM_WAIT_VALUE_GEQ)))
	testenv.Must(t, b.Use(s))
	testenv.MustBounded(t, "b.Free", b.Free)
	testenv.Must(t, libcuda.StreamDestroy(s))
	testenv.Must(t, libcuda.DevicePrimaryCtxRelease(dev)) // the program's hold ends here
	var flags uint32
	var active int32
	testenv.Must(t, libcuda.DevicePrimaryCtxGetState(dev, &flags, &active))
	if st := hostmem.ReadStats(); active == 0 || st.Pending != 1 {
		t.Fatalf("after the program's hold ended: context active %d, %+v; want it held by the pending release", active, st)
	}
	open()
	testenv.Eventually(t, "released", func() bool { return hostmem.ReadStats().Pending == 0 })
	testenv.Must(t, libcuda.MemFreeHost(word)) // the context is still held for the retired registration
	freed = true                               // the deferred open must not write to freed memory
	memtest.Drain(t)
}

// lastDevice is the device of the highest ordinal: on the simulator one
// that no earlier test has kept memory in for good.
func lastDevice(t testing.TB) libcuda.Device {
	t.Helper()
	var n int32
	testenv.Must(t, libcuda.DeviceGetCount(&n))
	var dev libcuda.Device
	testenv.Must(t, libcuda.DeviceGet(&dev, n-1))
	return dev
}

// Completed events are kept for reuse. A kept event holds its primary
// context, so it stays valid when the program releases the context between
// uses (on the H200 a kept event of a destroyed context crashed the driver),
// and Drain lets everything go.
func TestKeptEventsHoldTheirContextAndDrainLetsGo(t *testing.T) {
	testenv.NoErrorsLogged(t)
	memtest.Drain(t)
	heldBefore := hostmem.ReadStats().HeldContexts // by memory kept after earlier failures
	dev := lastDevice(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cycle := func() {
		var cu libcuda.Context
		testenv.Must(t, libcuda.DevicePrimaryCtxRetain(&cu, dev))
		testenv.Must(t, libcuda.CtxSetCurrent(cu))
		var s libcuda.Stream
		testenv.Must(t, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
		b, err := hostmem.Wrap(cu, make([]int64, 512))
		testenv.Must(t, err)
		testenv.Must(t, b.Use(s))
		testenv.MustBounded(t, "b.Free", b.Free)
		testenv.Eventually(t, "released", func() bool { return hostmem.ReadStats().Pending == 0 }) // the event goes back to the pool
		hostmem.Trim()                                                                             // the retired registration no longer holds the context
		testenv.Must(t, libcuda.StreamDestroy(s))
		testenv.Must(t, libcuda.CtxSetCurrent(0))
		testenv.Must(t, libcuda.DevicePrimaryCtxRelease(dev)) // the program's hold ends
	}
	cycle()
	var flags uint32
	var active int32
	testenv.Must(t, libcuda.DevicePrimaryCtxGetState(dev, &flags, &active))
	if held := hostmem.ReadStats().HeldContexts; held != heldBefore+1 || active == 0 {
		t.Fatalf("with an event kept: hostmem holds %d contexts (%d before), context active %d; want the kept event to hold it", held, heldBefore, active)
	}
	cycle() // reuses the kept event
	memtest.Drain(t)
	if held := hostmem.ReadStats().HeldContexts; held != heldBefore {
		t.Fatalf("after Drain hostmem holds %d contexts, %d before the test", held, heldBefore)
	}
	if heldBefore > 0 {
		return // memory kept after an earlier failure holds the context for good
	}
	testenv.Must(t, libcuda.DevicePrimaryCtxGetState(dev, &flags, &active))
	if active != 0 {
		t.Fatal("after Drain, hostmem still holds the primary context")
	}
}

// A use recorded before another on the same stream but freed after it must
// not be taken for complete because the earlier one is: the reaper orders
// a stream's uses by when their events were recorded, not by when the
// buffers were freed. And the earlier one, complete, must not wait for the
// later one.
func TestReleaseFollowsRecordOrderNotFreeOrder(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	g := testenv.NewGate(t)
	memtest.Drain(t)
	early, err := hostmem.Wrap(cu, make([]byte, 8192))
	testenv.Must(t, err)
	testenv.Must(t, early.Use(s)) // recorded before the gate: completes at once
	g.Hold(t, s)
	late, err := hostmem.Wrap(cu, make([]byte, 8192))
	testenv.Must(t, err)
	testenv.Must(t, late.Use(s)) // recorded behind the gate
	testenv.MustBounded(t, "late.Free", late.Free)
	testenv.MustBounded(t, "early.Free", early.Free)
	// The early buffer's work is done: its release finishes although the
	// newer use on its stream is still held.
	settlesAtPending(t, 1, "with the gate closed: the late buffer's release, not the early one's")
	g.Open()
	memtest.Drain(t)
	if st := hostmem.ReadStats(); st.Pending != 0 || st.Registrations != 0 {
		t.Fatalf("after Drain: %+v", st)
	}
}

// Wait finishes the releases in progress but, unlike Drain, leaves their
// registrations retired (registered, pinned, revivable) and keeps the
// pooled events; Trim then unregisters them.
func TestWaitRetiresWithoutUnregistering(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	g := testenv.NewGate(t)
	memtest.Drain(t)
	g.Hold(t, s)
	const n = 3
	for range n {
		b, err := hostmem.Wrap(cu, make([]byte, 8192))
		testenv.Must(t, err)
		testenv.Must(t, b.Use(s))
		testenv.MustBounded(t, "b.Free", b.Free)
	}
	if st := hostmem.ReadStats(); st.Pending != n {
		t.Fatalf("behind the gate: %+v; want %d pending", st, n)
	}
	g.Open()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	testenv.MustBounded(t, "hostmem.Wait", func() error { return hostmem.Wait(ctx) })
	st := hostmem.ReadStats()
	if st.Pending != 0 || st.Retired != n || st.Registrations != n {
		t.Fatalf("after Wait: %+v; want none pending and %d retired registrations", st, n)
	}
	if st.HeldContexts == 0 {
		t.Fatalf("after Wait: %+v; want the pooled events' context still held", st)
	}
	if got := hostmem.Trim(); got != n {
		t.Fatalf("Trim ended %d registrations, want %d", got, n)
	}
	memtest.Drain(t)
}

// Of many uses on one stream, those recorded before the stream was held
// are released while it is held, and only those: the reaper finds the
// newest complete one without querying each.
func TestReleasesBeforeAHeldPointOfAStreamFinish(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	g := testenv.NewGate(t)
	memtest.Drain(t)
	const before, after = 37, 50
	var bufs []*hostmem.Buffer
	for i := range before + after {
		if i == before {
			g.Hold(t, s)
		}
		b, err := hostmem.Wrap(cu, make([]byte, 4096))
		testenv.Must(t, err)
		testenv.Must(t, b.Use(s))
		bufs = append(bufs, b)
	}
	rand.Shuffle(len(bufs), func(i, j int) { bufs[i], bufs[j] = bufs[j], bufs[i] })
	for _, b := range bufs {
		testenv.MustBounded(t, "b.Free", b.Free)
	}
	settlesAtPending(t, after, "with the stream held: those recorded after the hold")
	g.Open()
	memtest.Drain(t)
}

// CU_STREAM_PER_THREAD names another stream on each thread: a use of it
// on a second thread must not replace the use on the first, whose stream
// is still held.
func TestPerThreadStreamUsesOfTwoThreadsAreBothWaitedFor(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	g := testenv.NewGate(t)
	memtest.Drain(t)
	b, err := hostmem.Wrap(cu, make([]byte, 8192))
	testenv.Must(t, err)
	first, second := testenv.NewOSThread(t, cu), testenv.NewOSThread(t, cu)
	first.Do(func() {
		g.Hold(t, libcuda.CU_STREAM_PER_THREAD)
		testenv.Must(t, b.Use(libcuda.CU_STREAM_PER_THREAD))
	})
	second.Do(func() { testenv.Must(t, b.Use(libcuda.CU_STREAM_PER_THREAD)) })
	testenv.MustBounded(t, "b.Free", b.Free)
	settlesAtPending(t, 1, "while the first thread's per-thread stream is held")
	g.Open()
	first.Do(func() { testenv.Must(t, libcuda.StreamSynchronize(libcuda.CU_STREAM_PER_THREAD)) })
	memtest.Drain(t)
}

// A use of the per-thread stream inside the calling thread's own capture of
// it leases the memory to the graph, as a use on any captured stream does:
// the memory stays registered while the graph lives.
func TestUseInTheThreadsOwnPerThreadCaptureLeasesTheMemory(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0) // the per-thread stream is this thread's
	m := testenv.LoadKernels(t)
	out := memtest.DeviceInt64(t)
	const n = 1 << 12
	memtest.Drain(t)
	v, want := memtest.SumSetup(n)
	b, err := hostmem.Wrap(cu, v)
	testenv.Must(t, err)
	g, err := graph.Capture(libcuda.CU_STREAM_PER_THREAD, libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, func(s libcuda.Stream) error {
		memtest.SumOnDevice(t, m, s, b, n, out, 0)
		return b.Use(s)
	})
	testenv.Must(t, err)
	testenv.MustBounded(t, "b.Free", b.Free)
	v, b = nil, nil
	memtest.DrainReleases(t)
	if st := hostmem.ReadStats(); st.Registrations != 1 {
		t.Fatalf("with the graph alive: %+v, want its registration kept", st)
	}
	e, err := g.Instantiate()
	testenv.Must(t, err)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	s := testenv.NewStream(t)
	testenv.Must(t, libcuda.MemsetD8(out, 0, 8))
	testenv.Must(t, e.Launch(s))
	testenv.Must(t, libcuda.StreamSynchronize(s))
	if sum := memtest.ReadInt64(t, out); sum != want {
		t.Fatalf("graph's sum = %d, want %d", sum, want)
	}
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	memtest.Drain(t)
}

// The state of a freed buffer is reused for later buffers once its release
// has ended. A buffer freed long ago still behaves as freed, whatever its
// state now serves: Use fails, DevicePtr is 0, Free does nothing to the
// new buffer, and Size and Pointer still describe the old memory.
func TestAFreedBufferStaysFreedWhenItsStateIsReused(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	memtest.Drain(t)
	oldMem := make([]byte, 4096)
	old, err := hostmem.Wrap(cu, oldMem)
	testenv.Must(t, err)
	testenv.Must(t, old.Use(s))
	testenv.MustBounded(t, "old.Free", old.Free)
	memtest.DrainReleases(t) // its release has ended: its state may serve again
	var live []*hostmem.Buffer
	for range 64 { // enough wraps to take the old state out of the pool
		b, err := hostmem.Wrap(cu, make([]byte, 4096))
		testenv.Must(t, err)
		live = append(live, b)
	}
	if err := old.Use(s); !errors.Is(err, hostmem.ErrFreed) {
		t.Errorf("Use of the old buffer = %v, want ErrFreed", err)
	}
	if old.DevicePtr() != 0 {
		t.Error("DevicePtr of the old buffer is not 0")
	}
	if old.Size() != 4096 || old.Pointer() != unsafe.Pointer(&oldMem[0]) {
		t.Errorf("the old buffer says %d bytes at %p, want 4096 at %p", old.Size(), old.Pointer(), &oldMem[0])
	}
	testenv.MustBounded(t, "old.Free", old.Free)
	for i, b := range live {
		if b.DevicePtr() == 0 {
			t.Fatalf("buffer %d was freed by a Free of the old buffer", i)
		}
		testenv.Must(t, b.Use(s))
	}
	if st := hostmem.ReadStats(); st.Pending != 0 {
		t.Fatalf("after a Free of the old buffer: %+v, want no release started", st)
	}
	for _, b := range live {
		testenv.MustBounded(t, "b.Free", b.Free)
	}
	memtest.Drain(t)
}

// Stale buffers used from other goroutines while their states are reused:
// each call sees its buffer freed, nothing else changes (run with -race).
func TestStaleBuffersAreSafeWhileTheirStatesAreReused(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	stale := make(chan *hostmem.Buffer, 64)
	done := make(chan error)
	go func() {
		var err error
		for b := range stale {
			if e := b.Use(s); !errors.Is(e, hostmem.ErrFreed) && err == nil {
				err = fmt.Errorf("Use of a freed buffer = %v, want ErrFreed", e)
			}
			if b.DevicePtr() != 0 && err == nil {
				err = errors.New("DevicePtr of a freed buffer is not 0")
			}
			if e := b.Free(); e != nil && err == nil {
				err = e
			}
		}
		done <- err
	}()
	mem := make([]byte, 4096)
	for i := range 2000 {
		b, err := hostmem.Wrap(cu, mem)
		testenv.Must(t, err)
		testenv.Must(t, b.Use(s))
		testenv.MustBounded(t, "b.Free", b.Free)
		stale <- b
		if i%100 == 99 {
			testenv.MustBounded(t, "hostmem.Wait", func() error { return hostmem.Wait(testenv.Context(t)) })
		}
	}
	close(stale)
	testenv.Must(t, testenv.Recv(t, done, "the goroutine using stale buffers"))
	memtest.Drain(t)
}
