//go:build !gpu

package cuda_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// The tests of this file each guard a promise of package cuda's
// documentation that the simulator lets a test observe: which pool a
// retry trims, what a failed call leaves behind, what a failed library
// call records.

// An allocation refused for out of memory trims the pool it allocates
// from, and that pool alone: Alloc the device's current pool, AllocFrom the
// pool it was given. The retry is one more call of the same allocation.
func TestOutOfMemoryRetryTrimsThePoolItAllocatesFrom(t *testing.T) {
	f := newFixture(t)
	own, err := cuda.NewMemPool(f.ctx.Device())
	testenv.Must(t, err)
	defer own.Close()
	def, err := f.ctx.MemPool()
	testenv.Must(t, err)
	for _, c := range []struct {
		name, call string
		pool       *cuda.MemPool
		alloc      func() (cuda.Slice[byte], error)
	}{
		{"Alloc", "cuMemAllocAsync", def, func() (cuda.Slice[byte], error) { return cuda.Alloc[byte](f.s, 64) }},
		{"AllocFrom", "cuMemAllocFromPoolAsync", own, func() (cuda.Slice[byte], error) { return cuda.AllocFrom[byte](own, f.s, 64) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Another pool trimmed last, so that the one trimmed now shows.
			other := own
			if c.pool == own {
				other = def
			}
			testenv.Must(t, other.Trim(0))
			if got := testenv.SimStat(t, "last_trimmed_pool"); got != int64(other.Raw()) {
				t.Fatalf("the simulator's last trimmed pool %#x, want %#x", got, other.Raw())
			}
			trims, calls := testenv.SimStat(t, "pool_trims"), testenv.SimStat(t, "calls:"+c.call)
			testenv.SimFailNext(t, c.call, 1, libcuda.CUDA_ERROR_OUT_OF_MEMORY)
			x, err := c.alloc()
			testenv.Must(t, err)
			bounded(t, "x.Free", x.Free)
			if got := testenv.SimStat(t, "last_trimmed_pool"); got != int64(c.pool.Raw()) {
				t.Errorf("%s's retry trimmed pool %#x, want %#x (the pool it allocates from)", c.name, got, c.pool.Raw())
			}
			if d := testenv.SimStat(t, "pool_trims") - trims; d != 1 {
				t.Errorf("%d trims, want 1", d)
			}
			if d := testenv.SimStat(t, "calls:"+c.call) - calls; d != 2 {
				t.Errorf("%d calls of %s, want 2 (the refused one and the retry)", d, c.call)
			}
			// A trim that fails is no retry: the allocation's own error
			// is returned, and the allocation is not tried again.
			calls = testenv.SimStat(t, "calls:"+c.call)
			testenv.SimFailNext(t, c.call, 1, libcuda.CUDA_ERROR_OUT_OF_MEMORY)
			testenv.SimFailNext(t, "cuMemPoolTrimTo", 1, libcuda.CUDA_ERROR_UNKNOWN)
			if _, err := c.alloc(); !errors.Is(err, cuda.ErrOutOfMemory) || !strings.Contains(err.Error(), c.call) {
				t.Errorf("%s with the trim failing: %v, want %s's ErrOutOfMemory", c.name, err, c.call)
			}
			if d := testenv.SimStat(t, "calls:"+c.call) - calls; d != 1 {
				t.Errorf("with the trim failing: %d calls of %s, want 1", d, c.call)
			}
			// Another error than out of memory is not retried.
			calls, trims = testenv.SimStat(t, "calls:"+c.call), testenv.SimStat(t, "pool_trims")
			testenv.SimFailNext(t, c.call, 1, libcuda.CUDA_ERROR_INVALID_VALUE)
			if _, err := c.alloc(); !errors.Is(err, cuda.ErrInvalidValue) {
				t.Errorf("%s refused with invalid value: %v", c.name, err)
			}
			if d := testenv.SimStat(t, "calls:"+c.call) - calls; d != 1 || testenv.SimStat(t, "pool_trims") != trims {
				t.Errorf("an error other than out of memory: %d calls, %d trims; want 1 and 0", d, testenv.SimStat(t, "pool_trims")-trims)
			}
		})
	}
}

// Stream.Record's failures leave nothing behind: an event created whose
// record failed is destroyed, the error names the call that failed and
// matches its Result, and the stream records again afterwards.
func TestRecordFailureLeavesNoEvent(t *testing.T) {
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	for _, call := range []string{"cuEventCreate", "cuEventRecord"} {
		t.Run(call, func(t *testing.T) {
			events := testenv.SimStat(t, "live_events")
			testenv.SimFailNext(t, call, 1, libcuda.CUDA_ERROR_INVALID_VALUE)
			e, err := f.s.Record()
			if e != nil || !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), call) {
				t.Fatalf("Record with %s failing: %v, %v; want no event and the error of %s", call, e, err, call)
			}
			if n := testenv.SimStat(t, "live_events"); n != events {
				t.Errorf("%d live events after the failed Record, want %d", n, events)
			}
			e, err = f.s.Record()
			testenv.Must(t, err)
			testenv.Must(t, e.Sync(testenv.Context(t)))
			bounded(t, "e.Close", e.Close)
			if n := testenv.SimStat(t, "live_events"); n != events {
				t.Errorf("%d live events after a Record and Close, want %d", n, events)
			}
		})
	}
}

// A failed constructor keeps no hold on the context: after it, closing
// the Context (and the stream it used) releases the primary context. Each
// case runs in a fresh process, where nothing else holds it.
func TestFailedCallsKeepNoHoldOnTheContext(t *testing.T) {
	cases := []struct {
		name, call string
		use        func(ctx *cuda.Context, s *cuda.Stream) error
	}{
		{"NewStream", "cuStreamCreateWithPriority", func(ctx *cuda.Context, s *cuda.Stream) error {
			_, err := ctx.NewStream()
			return err
		}},
		{"NewEvent", "cuEventCreate", func(ctx *cuda.Context, s *cuda.Stream) error {
			_, err := cuda.NewEvent(ctx)
			return err
		}},
		{"Stream.Record", "cuEventRecord", func(ctx *cuda.Context, s *cuda.Stream) error {
			_, err := s.Record()
			return err
		}},
		{"LoadModule", "cuModuleLoadDataEx", func(ctx *cuda.Context, s *cuda.Stream) error {
			_, err := cuda.LoadModule(ctx, kernels.PTX)
			return err
		}},
		{"AllocManaged", "cuMemAllocManaged", func(ctx *cuda.Context, s *cuda.Stream) error {
			_, err := cuda.AllocManaged[int32](ctx, 16, cuda.AttachGlobal)
			return err
		}},
		{"Alloc", "cuMemAllocAsync", func(ctx *cuda.Context, s *cuda.Stream) error {
			_, err := cuda.Alloc[int32](s, 16)
			return err
		}},
		{"Pin", "cuMemHostRegister", func(ctx *cuda.Context, s *cuda.Stream) error {
			_, err := cuda.Pin(ctx, make([]int32, 1024))
			return err
		}},
		{"Library.Module", "cuLibraryGetModule", func(ctx *cuda.Context, s *cuda.Stream) error {
			lib, err := cuda.LoadLibrary(kernels.TypedPTX)
			if err != nil {
				return errors.Join(errors.New("LoadLibrary failed, not the call under test"), err)
			}
			defer lib.Close()
			_, err = lib.Module(ctx)
			return err
		}},
		{"Linker.Link", "cuLinkComplete", func(ctx *cuda.Context, s *cuda.Stream) error {
			var l cuda.Linker
			if err := l.AddPTX("k.ptx", kernels.PTX); err != nil {
				return errors.Join(errors.New("AddPTX failed, not the call under test"), err)
			}
			_, err := l.Link(ctx)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !testenv.InChild(t) {
				return
			}
			devs, err := cuda.Devices()
			testenv.Must(t, err)
			func() {
				ctx, err := devs[0].Context()
				testenv.Must(t, err)
				s, err := ctx.NewStream()
				testenv.Must(t, err)
				testenv.SimFailNext(t, c.call, 1, libcuda.CUDA_ERROR_INVALID_VALUE)
				if err := c.use(ctx, s); !errors.Is(err, cuda.ErrInvalidValue) {
					t.Fatalf("%s with %s failing: %v, want its error", c.name, c.call, err)
				}
				bounded(t, "s.Close", s.Close)
				bounded(t, "ctx.Close", ctx.Close)
			}()
			testenv.Must(t, hostmem.Drain(testenv.Context(t)))
			testenv.Eventually(t, "the primary context released", func() bool {
				runtime.GC()
				return testenv.SimStat(t, "primary_retains:0") == 0
			})
		})
	}
}

// Managed memory keeps its context: after Context.Close the primary
// context stays retained, the memory usable, until Free (which frees in
// the background) lets it go.
func TestManagedMemoryKeepsItsContextAfterClose(t *testing.T) {
	if !testenv.InChild(t) {
		return
	}
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	m, err := cuda.AllocManaged[int32](ctx, 256, cuda.AttachGlobal)
	testenv.Must(t, err)
	bounded(t, "ctx.Close", ctx.Close)
	if n := testenv.SimStat(t, "primary_retains:0"); n != 1 {
		t.Fatalf("after Context.Close with managed memory open: %d retains, want 1 (the memory's)", n)
	}
	data := m.Data()
	data[255] = 9 // the mapping is still there
	if _, _, err := m.LastPrefetch(); err != nil {
		t.Errorf("LastPrefetch after Context.Close: %v (the context must still be there)", err)
	}
	data = nil
	live := testenv.SimStat(t, "live_allocations")
	bounded(t, "m.Free", m.Free)
	testenv.Eventually(t, "the managed memory freed", func() bool { return testenv.SimStat(t, "live_allocations") == live-1 })
	testenv.Eventually(t, "the primary context released", func() bool {
		runtime.GC()
		return testenv.SimStat(t, "primary_retains:0") == 0
	})
	if err := m.Free(); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("a second Free: %v, want ErrFreed", err)
	}
}

// LostError.Launches: when the wait that reports the fault is a stream's
// that launched nothing, the candidates are the launches of every stream
// since its last completed wait (OneStream false): the faulting launch and
// the other streams' unwaited launches, newest first, not those a wait saw
// done.
func TestLostErrorFallsBackToEveryStream(t *testing.T) {
	if !testenv.InChild(t) {
		return
	}
	fs := newFaultSetup(t)
	quiet, err := fs.ctx.NewStream(cuda.NonBlocking())
	testenv.Must(t, err)
	fs.goodLaunches(t, 3) // one on each of the other streams
	testenv.Must(t, fs.others[0].Sync(testenv.Context(t)))
	illegal := testenv.SimStat(t, "illegal_addresses")
	_, lerr := fs.launchOutOfBounds()
	testenv.Must(t, lerr)
	testenv.WaitStat(t, "the fault", "illegal_addresses", illegal)
	err = quiet.Sync(testenv.Context(t))
	var l *cuda.LostError
	if !errors.As(err, &l) {
		t.Fatalf("the quiet stream's Sync after the fault: %v, want a *LostError", err)
	}
	if l.OneStream || l.Exact {
		t.Errorf("one stream %v, exact %v: want neither (the reporting stream launched nothing)", l.OneStream, l.Exact)
	}
	streams := map[libcuda.Stream]int{}
	for i, c := range l.Launches {
		streams[c.Stream]++
		if i > 0 && c.Number >= l.Launches[i-1].Number {
			t.Errorf("launch %d numbered %d after %d: want newest first", i, c.Number, l.Launches[i-1].Number)
		}
	}
	if streams[fs.bad.Raw()] != 1 || streams[fs.others[1].Raw()] != 1 || streams[fs.others[2].Raw()] != 1 || streams[fs.others[0].Raw()] != 0 || len(l.Launches) != 3 {
		t.Errorf("candidates %v: want the faulting launch and those of the two streams not waited for", l.Launches)
	}
}

// Stream.Do records the stream on its operands even when f fails (a
// library call that fails may have submitted part of its work): a Free of
// an operand read on a held stream waits for that stream.
func TestDoRecordsItsStreamWhenTheFunctionFails(t *testing.T) {
	testenv.OnPrimary(t, 0)
	f := newFixture(t)
	gate := testenv.NewGate(t)
	home := newStream(t, f.ctx, cuda.NonBlocking())
	user := newStream(t, f.ctx, cuda.NonBlocking())
	testenv.Must(t, f.ctx.Sync(testenv.Context(t)))
	base := testenv.SimStat(t, "live_allocations")
	x, err := cuda.Alloc[uint32](home, 1024)
	testenv.Must(t, err)
	y, err := cuda.Alloc[uint32](home, 1024)
	testenv.Must(t, err)
	sync(t, home)
	gate.Hold(t, user.Raw())
	// Reads: the user does not become the allocations' only stream, so
	// only Do's record puts it among their users, each of them.
	ops := [2]cuda.Operand{x.Operand(cuda.Read), y.Operand(cuda.Read)}
	failed := errors.New("the library call failed")
	if err := user.Do("failing", ops[:], func(raw libcuda.Stream) error { return failed }); !errors.Is(err, failed) {
		t.Fatalf("Do: %v, want f's error", err)
	}
	bounded(t, "x.Free", x.Free)
	bounded(t, "y.Free", y.Free)
	liveAllocationsStay(t, base+2, "the stream of a failed Do is held")
	gate.Open()
	testenv.Eventually(t, "the free", func() bool { return testenv.SimStat(t, "live_allocations") == base })
}

// A read recorded again on the same stream takes the stream's newer
// position: a write on another stream that had waited for the older one
// waits again for the newer read.
func TestRepeatedReadIsWaitedForAgain(t *testing.T) {
	testenv.OnPrimary(t, 0)
	f := newFixture(t)
	gate := testenv.NewGate(t)
	a := newStream(t, f.ctx, cuda.NonBlocking())
	b := newStream(t, f.ctx, cuda.NonBlocking())
	x := alloc(t, a, make([]int32, 256))
	y := alloc(t, a, make([]int32, 256))
	sync(t, a)
	read := func(s *cuda.Stream, m cuda.Slice[int32]) {
		t.Helper()
		ops := [1]cuda.Operand{m.Operand(cuda.Read)}
		testenv.Must(t, s.Do("read", ops[:], func(libcuda.Stream) error { return nil }))
	}
	testenv.Must(t, cuda.Memset(b, x, 1)) // b writes x, after a's allocation
	read(a, x)                            // a reads x
	testenv.Must(t, cuda.Memset(a, y, 2)) // a writes y
	read(b, y)                            // b waits for a up to its write of y
	gate.Hold(t, a.Raw())
	read(a, x) // a reads x again, behind the gate
	testenv.Must(t, cuda.Memset(b, x, 3))
	done := testenv.WaitAsync(func() error { return b.Sync(testenv.Context(t)) })
	testenv.StillWaiting(t, "b's write of x, after a's held read", done)
	gate.Open()
	testenv.Finished(t, "b's write of x", done)
}

// The driver's linker's state is destroyed on every path of Link: a
// refused input, a refused link, and success; and the image returned is a
// copy (the simulator spoils its own at cuLinkDestroy).
func TestLinkerDestroysItsStateOnEveryPath(t *testing.T) {
	f := newFixture(t)
	live := testenv.SimStat(t, "live_link_states")
	check := func(what string) {
		t.Helper()
		if n := testenv.SimStat(t, "live_link_states"); n != live {
			t.Errorf("%s: %d link states live, want %d", what, n, live)
		}
	}
	var bad cuda.Linker
	testenv.Must(t, bad.AddPTX("kernels.ptx", kernels.PTX))
	testenv.Must(t, bad.AddPTX("bad.ptx", []byte(badPTX)))
	if _, err := bad.Link(f.ctx); err == nil {
		t.Error("bad PTX linked")
	}
	check("a refused input")
	var l cuda.Linker
	testenv.Must(t, l.AddPTX("kernels.ptx", kernels.PTX))
	for _, call := range []string{"cuLinkAddData", "cuLinkComplete"} {
		testenv.SimFailNext(t, call, 1, libcuda.CUDA_ERROR_INVALID_VALUE)
		if _, err := l.Link(f.ctx); !strings.Contains(fmt.Sprint(err), call) || !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("Link with %s failing: %v, want the error of that call", call, err)
		}
		check(call + " failing")
	}
	testenv.SimFailNext(t, "cuLinkCreate", 1, libcuda.CUDA_ERROR_INVALID_VALUE)
	if _, err := l.Link(f.ctx); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Link with cuLinkCreate failing: %v", err)
	}
	check("cuLinkCreate failing")
	image, err := l.Link(f.ctx)
	testenv.Must(t, err)
	check("a link")
	if !strings.Contains(string(image), ".entry add_one_i32") {
		t.Errorf("the image does not hold the input's kernel: a pointer into the destroyed link state? %q", image[:min(len(image), 64)])
	}
	mod, err := cuda.LoadModule(f.ctx, image)
	testenv.Must(t, err)
	bounded(t, "mod.Close", mod.Close)
}

// In debug mode a launch returns once its kernel has finished (a held
// stream holds the launch), for a device whose state existed before
// SetDebug too; off again, it returns at once. SetDebug returns the mode
// it replaces.
func TestSetDebugAppliesToLaunchesThatFollow(t *testing.T) {
	testenv.OnPrimary(t, 0)
	f := newFixture(t)
	gate := testenv.NewGate(t)
	s := newStream(t, f.ctx, cuda.NonBlocking())
	x := alloc(t, s, make([]int32, 64))
	add := f.fn(t, "add_one_i32")
	launch := func() error {
		return s.Launch(add, cuda.Grid(1, 1, 1), cuda.Block(64, 1, 1), x.Arg(), cuda.Uint64(64))
	}
	testenv.Must(t, launch()) // the device's state exists
	prev := cuda.SetDebug(cuda.DebugSync)
	defer cuda.SetDebug(prev)
	if prev != cuda.DebugOff {
		t.Fatalf("SetDebug returned %v, want DebugOff (the tests run with debug off)", prev)
	}
	gate.Hold(t, s.Raw())
	done := testenv.WaitAsync(launch)
	testenv.StillWaiting(t, "a launch on a held stream in debug mode", done)
	gate.Open()
	testenv.Finished(t, "the launch in debug mode", done)
	if was := cuda.SetDebug(cuda.DebugOff); was != cuda.DebugSync {
		t.Errorf("SetDebug(DebugOff) returned %v, want DebugSync", was)
	}
	gate2 := testenv.NewGate(t)
	gate2.Hold(t, s.Raw())
	testenv.Finished(t, "a launch on a held stream with debug off", testenv.WaitAsync(launch))
	gate2.Open()
	sync(t, s)
	if got := read(t, s, x); got[0] != 3 {
		t.Errorf("x[0] = %d after three launches, want 3", got[0])
	}
}

// A C++ kernel's pointer-to-const parameter is a read without ReadOnly: a
// launch on another stream that also only reads the memory does not wait
// for the first (held) one, while a launch that writes through a plain
// pointer what the held one wrote waits for it.
func TestConstPointerParameterIsARead(t *testing.T) {
	testenv.OnPrimary(t, 0)
	f := newFixture(t)
	typed, err := cuda.LoadModule(f.ctx, kernels.TypedPTX)
	testenv.Must(t, err)
	defer typed.Close()
	axpy, err := typed.Func("axpy") // (float a, const float *x, float *y, int n)
	testenv.Must(t, err)
	gate := testenv.NewGate(t)
	a := newStream(t, f.ctx, cuda.NonBlocking())
	b := newStream(t, f.ctx, cuda.NonBlocking())
	x := alloc(t, a, []float32{1, 2})
	ya := alloc(t, a, []float32{0, 0})
	yb := alloc(t, b, []float32{0, 0})
	g, blk := cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1)
	// b's first read of x waits for a's copy into it, before the hold.
	testenv.Must(t, b.Launch(axpy, g, blk, cuda.Float32(1), x.Arg(), yb.Arg(), cuda.Int32(2)))
	sync(t, b)
	gate.Hold(t, a.Raw())
	testenv.Must(t, a.Launch(axpy, g, blk, cuda.Float32(1), x.Arg(), ya.Arg(), cuda.Int32(2)))
	testenv.Must(t, b.Launch(axpy, g, blk, cuda.Float32(1), x.Arg(), yb.Arg(), cuda.Int32(2)))
	testenv.Finished(t, "b's launch reading x beside a's held one", testenv.WaitAsync(func() error { return b.Sync(testenv.Context(t)) }))
	testenv.Must(t, b.Launch(axpy, g, blk, cuda.Float32(1), x.Arg(), ya.Arg(), cuda.Int32(2)))
	done := testenv.WaitAsync(func() error { return b.Sync(testenv.Context(t)) })
	testenv.StillWaiting(t, "b's launch writing what a's held launch writes", done)
	gate.Open()
	testenv.Finished(t, "b's launch writing ya", done)
	if got := read(t, a, ya); got[0] != 2 || got[1] != 4 {
		t.Errorf("ya = %v, want [2 4] (two axpys in order)", got)
	}
}

// Values dropped without Close or Free are released without an error
// logged: events (made or recorded), pools of the program's own and
// managed memory.
func TestDroppedValuesAreReleasedWithoutErrors(t *testing.T) {
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	sync(t, f.s)
	events, allocs := testenv.SimStat(t, "live_events"), testenv.SimStat(t, "live_allocations")
	func() {
		e, err := cuda.NewEvent(f.ctx)
		testenv.Must(t, err)
		testenv.Must(t, f.s.RecordEvent(e))
		_, err = f.s.Record()
		testenv.Must(t, err)
		p, err := cuda.NewMemPool(f.ctx.Device())
		testenv.Must(t, err)
		_ = p
		m, err := cuda.AllocManaged[int32](f.ctx, 64, cuda.AttachGlobal)
		testenv.Must(t, err)
		testenv.Must(t, cuda.Zero(f.s, m.Slice()))
	}()
	sync(t, f.s)
	testenv.Eventually(t, "the dropped values released", func() bool {
		runtime.GC()
		return testenv.SimStat(t, "live_events") <= events && testenv.SimStat(t, "live_allocations") <= allocs
	})
}

// A closed MemPool refuses every use with ErrClosed, without the driver;
// a nil one with ErrNil.
func TestMemPoolAfterCloseIsClosed(t *testing.T) {
	f := newFixture(t)
	p, err := cuda.NewMemPool(f.ctx.Device())
	testenv.Must(t, err)
	bounded(t, "p.Close", p.Close)
	calls := testenv.CountCalls(t, func() {
		for name, err := range map[string]error{
			"Trim":                p.Trim(0),
			"SetReleaseThreshold": p.SetReleaseThreshold(1),
			"ResetHighWater":      p.ResetHighWater(),
		} {
			if !errors.Is(err, cuda.ErrClosed) {
				t.Errorf("%s after Close: %v, want ErrClosed", name, err)
			}
		}
		if _, err := p.Usage(); !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("Usage after Close: %v, want ErrClosed", err)
		}
		if _, err := p.ReleaseThreshold(); !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("ReleaseThreshold after Close: %v, want ErrClosed", err)
		}
	})
	for name, n := range calls {
		if strings.HasPrefix(name, "cuMemPool") {
			t.Errorf("%d calls of %s on a closed pool", n, name)
		}
	}
	var nilPool *cuda.MemPool
	if err := nilPool.Trim(0); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("Trim of a nil pool: %v, want ErrNil", err)
	}
	if _, err := cuda.AllocFrom[byte](nilPool, f.s, 1); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("AllocFrom a nil pool: %v, want ErrNil", err)
	}
	if err := nilPool.Close(); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("Close of a nil pool: %v, want ErrNil", err)
	}
}

// A Linker does not write into its caller's slice: PTX without its NUL
// is copied with one, never extended in place into the slice's spare
// capacity.
func TestLinkerLeavesTheCallersSliceAlone(t *testing.T) {
	f := newFixture(t)
	n := len(kernels.PTX)
	for n > 0 && kernels.PTX[n-1] == 0 {
		n--
	}
	buf := make([]byte, n+8)
	copy(buf, kernels.PTX[:n])
	buf[n] = 'X'
	var l cuda.Linker
	testenv.Must(t, l.AddPTX("kernels.ptx", buf[:n]))
	if buf[n] != 'X' {
		t.Fatalf("AddPTX wrote %q past the PTX it was given, into the caller's slice", buf[n])
	}
	image, err := l.Link(f.ctx)
	testenv.Must(t, err)
	if buf[n] != 'X' {
		t.Fatalf("Link wrote %q past the PTX it was given", buf[n])
	}
	mod, err := cuda.LoadModule(f.ctx, image)
	testenv.Must(t, err)
	bounded(t, "mod.Close", mod.Close)
}

// Managed.Prefetch remembers its stream as a user: a Free after a
// prefetch on a held stream waits for it. LastPrefetch names the device a
// prefetch went to, the second one too; after Free every use but Data is
// ErrFreed.
func TestManagedPrefetchIsAUseAndLastPrefetchNamesTheDevice(t *testing.T) {
	testenv.OnPrimary(t, 0)
	f := newFixture(t)
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	s := newStream(t, f.ctx, cuda.NonBlocking())
	testenv.Must(t, f.ctx.Sync(testenv.Context(t)))
	before := testenv.SimStat(t, "live_allocations")
	m, err := cuda.AllocManaged[int32](f.ctx, 256, cuda.AttachGlobal)
	testenv.Must(t, err)
	for _, d := range devs {
		testenv.Must(t, m.Prefetch(f.s, cuda.OnDevice(d)))
		sync(t, f.s)
		loc, ok, err := m.LastPrefetch()
		testenv.Must(t, err)
		if !ok || loc.IsHost() || loc.Device() != d || loc.String() != fmt.Sprintf("device %d", d.Ordinal()) {
			t.Errorf("after a prefetch to device %d: LastPrefetch %v, ok %v", d.Ordinal(), loc, ok)
		}
	}
	gate := testenv.NewGate(t)
	gate.Hold(t, s.Raw())
	testenv.Must(t, m.Prefetch(s, cuda.OnHost()))
	fences := testenv.SimStat(t, "fences")
	bounded(t, "m.Free", m.Free)
	// cuMemFree waits for the whole device: called before the prefetch
	// ended, it would wait there as a fence, holding other threads'
	// calls. Free waits for the memory's streams first.
	liveAllocationsStay(t, before+1, "a prefetch of the memory is held")
	if n := testenv.SimStat(t, "fences"); n != fences {
		t.Errorf("%d fences began while the prefetch is held: cuMemFree called before its stream's work ended", n-fences)
	}
	gate.Open()
	testenv.Eventually(t, "the managed memory freed", func() bool { return testenv.SimStat(t, "live_allocations") == before })
	if err := m.Advise(cuda.ReadMostly, cuda.OnHost()); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("Advise after Free: %v, want ErrFreed", err)
	}
	if _, _, err := m.LastPrefetch(); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("LastPrefetch after Free: %v, want ErrFreed", err)
	}
	var nilManaged *cuda.Managed[int32]
	if nilManaged.Data() != nil || nilManaged.Len() != 0 {
		t.Error("a nil Managed has data")
	}
	for name, err := range map[string]error{
		"Free":     nilManaged.Free(),
		"Prefetch": nilManaged.Prefetch(f.s, cuda.OnHost()),
		"Advise":   nilManaged.Advise(cuda.ReadMostly, cuda.OnHost()),
	} {
		if !errors.Is(err, cuda.ErrNil) {
			t.Errorf("%s of a nil Managed: %v, want ErrNil", name, err)
		}
	}
	if _, err := cuda.AllocManaged[*int32](f.ctx, 4, cuda.AttachGlobal); !errors.Is(err, cuda.ErrElemType) {
		t.Errorf("AllocManaged of pointers: %v, want ErrElemType", err)
	}
	if _, err := cuda.AllocManaged[int32](f.ctx, 4, cuda.Attach(7)); err == nil {
		t.Error("AllocManaged with attach 7: no error")
	}
	if _, err := cuda.AllocManaged[int32](f.ctx, -1, cuda.AttachHost); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("AllocManaged of -1: %v, want ErrLength", err)
	}
	h, err := cuda.AllocManaged[int32](f.ctx, 1, cuda.AttachHost)
	testenv.Must(t, err)
	bounded(t, "h.Free", h.Free)
	testenv.Eventually(t, "the second managed memory freed", func() bool { return testenv.SimStat(t, "live_allocations") == before })
}

// Event.Raw is the driver's handle, which the driver's calls take; a nil
// or zero Event has none. A closed event refuses every use with ErrClosed,
// and Elapsed refuses an event that cannot time.
func TestEventRawAndUseAfterClose(t *testing.T) {
	f := newFixture(t)
	e, err := cuda.NewEvent(f.ctx)
	testenv.Must(t, err)
	if e.Raw() == 0 {
		t.Fatal("an event's Raw is 0")
	}
	testenv.Must(t, f.s.RecordEvent(e))
	sync(t, f.s)
	if err := libcuda.EventQuery(e.Raw()); err != nil {
		t.Errorf("cuEventQuery of Raw after the stream's Sync: %v", err)
	}
	var nilEvent *cuda.Event
	if nilEvent.Raw() != 0 || (&cuda.Event{}).Raw() != 0 {
		t.Error("a nil or zero Event has a handle")
	}
	quiet, err := cuda.NewEvent(f.ctx, cuda.DisableTiming())
	testenv.Must(t, err)
	testenv.Must(t, f.s.RecordEvent(quiet))
	sync(t, f.s)
	if _, err := cuda.Elapsed(e, quiet); err == nil {
		t.Error("Elapsed with a DisableTiming event: no error")
	}
	if _, err := cuda.Elapsed(quiet, e); err == nil {
		t.Error("Elapsed from a DisableTiming event: no error")
	}
	if d, err := cuda.Elapsed(e, e); err != nil || d != 0 {
		t.Errorf("Elapsed of an event and itself: %v, %v; want 0", d, err)
	}
	bounded(t, "quiet.Close", quiet.Close)
	bounded(t, "e.Close", e.Close)
	if _, err := e.Query(); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Query after Close: %v, want ErrClosed", err)
	}
	for name, err := range map[string]error{
		"Sync":        e.Sync(testenv.Context(t)),
		"RecordEvent": f.s.RecordEvent(e),
		"Wait":        f.s.Wait(e),
		"Close":       e.Close(),
	} {
		if !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if _, err := cuda.Elapsed(e, e); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Elapsed after Close: %v, want ErrClosed", err)
	}
}

// Stream.Do's refusals name the operand and leave every operand's Ptr at
// 0, hold nothing (the Slices can be freed at once) and run nothing; an
// access with bits beyond ReadWrite is refused as 0 is.
func TestDoRefusalsLeaveNothingBehind(t *testing.T) {
	f := newFixture(t)
	x, err := cuda.Alloc[float32](f.s, 4)
	testenv.Must(t, err)
	y, err := cuda.Alloc[float32](f.s, 4)
	testenv.Must(t, err)
	freed, err := cuda.Alloc[float32](f.s, 4)
	testenv.Must(t, err)
	bounded(t, "freed.Free", freed.Free)
	closed := newStream(t, f.ctx)
	bounded(t, "closed.Close", closed.Close)
	for _, c := range []struct {
		name    string
		s       *cuda.Stream
		ops     [3]cuda.Operand
		want    error
		operand string
	}{
		{"a zero Slice third", f.s, [3]cuda.Operand{x.Operand(cuda.Read), y.Operand(cuda.Write), (cuda.Slice[float32]{}).Operand(cuda.Read)}, cuda.ErrNil, "operand 2"},
		{"a freed Slice second", f.s, [3]cuda.Operand{x.Operand(cuda.Read), freed.Operand(cuda.Write), y.Operand(cuda.ReadWrite)}, cuda.ErrFreed, "operand 1"},
		{"an access beyond ReadWrite", f.s, [3]cuda.Operand{x.Operand(cuda.Read), y.Operand(cuda.Read | 4), x.Operand(cuda.Read)}, nil, "operand 1"},
		{"an access of 0", f.s, [3]cuda.Operand{x.Operand(cuda.Read), y.Operand(cuda.Read), x.Operand(0)}, nil, "operand 2"},
		{"a closed stream", closed, [3]cuda.Operand{x.Operand(cuda.Read), y.Operand(cuda.Read), x.Operand(cuda.Write)}, cuda.ErrClosed, "Do"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ops := c.ops
			err := c.s.Do("libY", ops[:], func(libcuda.Stream) error {
				t.Error("f ran")
				return nil
			})
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.operand) {
				t.Errorf("Do: %v, want an error (%v) naming %s", err, c.want, c.operand)
			}
			for i := range ops {
				if p := ops[i].Ptr(); p != 0 {
					t.Errorf("operand %d's Ptr is %#x after the refusal, want 0", i, p)
				}
			}
		})
	}
	// Nothing is held: Free returns at once.
	testenv.Finished(t, "Free of x after the refusals", testenv.WaitAsync(x.Free))
	testenv.Finished(t, "Free of y after the refusals", testenv.WaitAsync(y.Free))
	for a, want := range map[cuda.Access]string{cuda.Read: "read", cuda.Write: "write", cuda.ReadWrite: "read-write", 4: "Access(4)"} {
		if got := a.String(); got != want {
			t.Errorf("Access %d is %q, want %q", uint8(a), got, want)
		}
	}
	if op := x.Operand(cuda.Write); op.Access() != cuda.Write || op.Ptr() != 0 {
		t.Errorf("an Operand before Do: access %v, Ptr %#x; want write and 0", op.Access(), op.Ptr())
	}
}

// When f panics, Do ends its holds (a Free of an operand returns) and the
// panic goes on to the caller.
func TestDoPanicEndsItsHolds(t *testing.T) {
	f := newFixture(t)
	x, err := cuda.Alloc[float32](f.s, 4)
	testenv.Must(t, err)
	ops := [1]cuda.Operand{x.Operand(cuda.Write)}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want f's panic", r)
			}
		}()
		_ = f.s.Do("libY", ops[:], func(libcuda.Stream) error { panic("boom") })
		t.Error("Do returned after f panicked")
	}()
	if p := ops[0].Ptr(); p != 0 {
		t.Errorf("Ptr %#x after the panic, want 0", p)
	}
	testenv.Finished(t, "Free after a panic in Do", testenv.WaitAsync(x.Free))
	testenv.Finished(t, "Stream.Close after a panic in Do", testenv.WaitAsync(f.s.Close))
}

// Elapsed is the time between the two events' completions: with the
// second held behind a gate for 20 ms after the first completed, at least
// that (a bound the order of events guarantees, however slow the machine).
func TestElapsedIsTheTimeBetweenTheEvents(t *testing.T) {
	testenv.OnPrimary(t, 0)
	f := newFixture(t)
	first, err := f.s.Record()
	testenv.Must(t, err)
	defer first.Close()
	testenv.Must(t, first.Sync(testenv.Context(t)))
	gate := testenv.NewGate(t)
	gate.Hold(t, f.s.Raw())
	second, err := f.s.Record()
	testenv.Must(t, err)
	defer second.Close()
	time.Sleep(20 * time.Millisecond)
	gate.Open()
	testenv.Must(t, second.Sync(testenv.Context(t)))
	d, err := cuda.Elapsed(first, second)
	testenv.Must(t, err)
	if d < 20*time.Millisecond {
		t.Errorf("Elapsed = %v, want at least the 20ms the second event was held", d)
	}
}

// A Free that comes while Do holds an operand waits for Do to end, and
// fails the next Do that holds the allocation (ErrFreed, as if the Free
// had come first) without touching the first Do's hold.
func TestFreeBetweenTwoHoldsFailsTheSecond(t *testing.T) {
	f := newFixture(t)
	x, err := cuda.Alloc[float32](f.s, 4)
	testenv.Must(t, err)
	y := alloc(t, f.s, []float32{1})
	inF, release := make(chan struct{}), make(chan struct{})
	first := testenv.WaitAsync(func() error {
		ops := [1]cuda.Operand{x.Operand(cuda.Read)}
		return f.s.Do("first", ops[:], func(libcuda.Stream) error {
			close(inF)
			<-release
			return nil
		})
	})
	testenv.Recv(t, inF, "the first Do's function")
	freed := testenv.WaitAsync(x.Free)
	// The Free waits for the lock: until it does, a second Do would
	// still get its hold; wait until one is refused.
	var err2 error
	testenv.Eventually(t, "a Do refused while the Free waits", func() bool {
		ops := [2]cuda.Operand{y.Operand(cuda.Read), x.Operand(cuda.Read)}
		err2 = f.s.Do("second", ops[:], func(libcuda.Stream) error { return nil })
		return err2 != nil
	})
	if !errors.Is(err2, cuda.ErrFreed) || !strings.Contains(err2.Error(), "operand 1") {
		t.Errorf("the second Do: %v, want ErrFreed for operand 1", err2)
	}
	testenv.StillWaiting(t, "Free while the first Do holds the memory", freed)
	close(release)
	testenv.Finished(t, "the first Do", first)
	testenv.Finished(t, "the Free", freed)
	// y's hold by the refused Do ended too.
	testenv.Finished(t, "Free of y", testenv.WaitAsync(y.Free))
}

// A Stream.Do operand covers its Slice's bytes, all of them: a read of
// the whole of x on one stream waits for another stream's held write of
// x's last element.
func TestDoOperandCoversAllItsBytes(t *testing.T) {
	testenv.OnPrimary(t, 0)
	f := newFixture(t)
	gate := testenv.NewGate(t)
	a := newStream(t, f.ctx, cuda.NonBlocking())
	b := newStream(t, f.ctx, cuda.NonBlocking())
	x := alloc(t, a, make([]float32, 4))
	sync(t, a)
	ops := [1]cuda.Operand{x.Operand(cuda.Read)}
	testenv.Must(t, b.Do("read", ops[:], func(libcuda.Stream) error { return nil })) // b waits for a's copy once
	sync(t, b)
	last, err := x.Slice(3, 4)
	testenv.Must(t, err)
	gate.Hold(t, a.Raw())
	testenv.Must(t, cuda.Memset(a, last, 5))
	testenv.Must(t, b.Do("read", ops[:], func(libcuda.Stream) error { return nil }))
	done := testenv.WaitAsync(func() error { return b.Sync(testenv.Context(t)) })
	testenv.StillWaiting(t, "b's read of x after a's held write of its last element", done)
	gate.Open()
	testenv.Finished(t, "b's read", done)
}

// The failure to release the context at an Event's Close, when the event
// held its last reference, is Close's error.
func TestEventCloseReportsTheContextRelease(t *testing.T) {
	if !testenv.InChild(t) {
		return
	}
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	e, err := cuda.NewEvent(ctx)
	testenv.Must(t, err)
	bounded(t, "ctx.Close", ctx.Close)
	testenv.SimFailNext(t, "cuDevicePrimaryCtxRelease", 1, libcuda.CUDA_ERROR_INVALID_VALUE)
	if err := e.Close(); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "cuDevicePrimaryCtxRelease") {
		t.Errorf("Close with the release failing: %v, want its error", err)
	}
}

// The ordering across streams waits exactly where a use conflicts with
// one not yet waited for: one cuStreamWaitEvent per other stream to wait
// for, none for a stream already waited for past the conflicting use, none
// between reads, none on the stream that owns the memory alone.
func TestOrderingWaitsOncePerConflict(t *testing.T) {
	f := newFixture(t)
	var s [3]*cuda.Stream
	for i := range s {
		s[i] = newStream(t, f.ctx, cuda.NonBlocking())
	}
	a, b, c := s[0], s[1], s[2]
	x := alloc(t, a, make([]float32, 4))
	part := func(i int) cuda.Slice[float32] {
		p, err := x.Slice(i, i+1)
		testenv.Must(t, err)
		return p
	}
	var asked int64 // the last use's cuStreamIsCapturing calls: none on the memory's only stream
	use := func(on *cuda.Stream, m cuda.Slice[float32], access cuda.Access) int64 {
		t.Helper()
		calls := testenv.CountThreadCalls(t, func() {
			ops := [1]cuda.Operand{m.Operand(access)}
			testenv.Must(t, on.Do("use", ops[:], func(libcuda.Stream) error { return nil }))
		})
		asked = calls["cuStreamIsCapturing"]
		return calls["cuStreamWaitEvent"]
	}
	for i, step := range []struct {
		what  string
		on    *cuda.Stream
		m     cuda.Slice[float32]
		acc   cuda.Access
		waits int64
	}{
		{"b reads what a wrote", b, x, cuda.Read, 1},
		{"b reads it again", b, x, cuda.Read, 0},
		{"c reads it", c, x, cuda.Read, 1},
		{"a writes it after both reads", a, x, cuda.Write, 2},
		{"b writes it after a's write", b, x, cuda.Write, 1},
		{"b writes it again, alone", b, x, cuda.Write, 0},
		{"c reads a part", c, part(0), cuda.Read, 1},
		{"c reads another part", c, part(1), cuda.Read, 0},
		{"a reads a part", a, part(1), cuda.Read, 1},
		{"a writes a part no one else used since b", a, part(3), cuda.Write, 0},
		{"c writes the part a wrote", c, part(3), cuda.Write, 1},
		{"b reads the first part, which c and a only read", b, part(0), cuda.Read, 0},
		{"b writes the whole", b, x, cuda.ReadWrite, 2},
		{"c reads the first part", c, part(0), cuda.Read, 1},
		{"b writes the first part, after c's read", b, part(0), cuda.Write, 1},
		{"c reads the second part, which only b's waited-for whole write covers", c, part(1), cuda.Read, 0},
		{"c writes the third part", c, part(2), cuda.Write, 0},
		{"a writes the fourth part, beside c's write", a, part(3), cuda.Write, 1},
		{"b reads the third part, before a's written fourth", b, part(2), cuda.Read, 1},
		{"c reads the first part, after b's write of it", c, part(0), cuda.Read, 1},
		{"c reads the whole, from the same start", c, x, cuda.Read, 1},
		{"b writes the fourth part, after a's write and c's whole read", b, part(3), cuda.Write, 2},
		{"c reads the third part, which it wrote", c, part(2), cuda.Read, 0},
		{"b reads the third part again", b, part(2), cuda.Read, 0},
	} {
		if got := use(step.on, step.m, step.acc); got != step.waits {
			t.Errorf("step %d, %s: %d waits, want %d", i+1, step.what, got, step.waits)
		}
		// After a write of the whole by the only stream to use the memory
		// since, that stream's uses cost one load: not even the question
		// whether it is being captured.
		if alone := strings.HasSuffix(step.what, ", alone"); alone && asked != 0 {
			t.Errorf("step %d, %s: %d cuStreamIsCapturing calls, want none", i+1, step.what, asked)
		}
	}
	for _, st := range s {
		sync(t, st)
	}
}

// A stream that has waited for more streams than it remembers (8) still
// orders its uses after each of them: the oldest is forgotten, and waited
// for again when needed.
func TestOrderingRemembersTheLatestStreamsWaitedFor(t *testing.T) {
	f := newFixture(t)
	reader := newStream(t, f.ctx, cuda.NonBlocking())
	const n = 10
	var writers [n]*cuda.Stream
	var mems [n]cuda.Slice[float32]
	for i := range writers {
		writers[i] = newStream(t, f.ctx, cuda.NonBlocking())
		mems[i] = alloc(t, writers[i], []float32{float32(i)})
	}
	read := func(m cuda.Slice[float32]) int64 {
		t.Helper()
		return testenv.CountThreadCalls(t, func() {
			ops := [1]cuda.Operand{m.Operand(cuda.Read)}
			testenv.Must(t, reader.Do("read", ops[:], func(libcuda.Stream) error { return nil }))
		})["cuStreamWaitEvent"]
	}
	for i := range mems {
		if w := read(mems[i]); w != 1 {
			t.Errorf("the first read of writer %d's memory: %d waits, want 1", i, w)
		}
	}
	// Each writer writes again: the reader must wait for it, remembered
	// or not.
	for i := range mems {
		testenv.Must(t, cuda.Memset(writers[i], mems[i], float32(i+1)))
		if w := read(mems[i]); w != 1 {
			t.Errorf("a read after writer %d's second write: %d waits, want 1", i, w)
		}
	}
	// The reader remembers the last 8 writers it waited for (2 to 9),
	// not the first two: read newest first, so that a wait for a forgotten
	// one evicts none that is read after it.
	for i := n - 1; i >= 0; i-- {
		want := int64(0)
		if i < n-8 {
			want = 1
		}
		if got := read(mems[i]); got != want {
			t.Errorf("a third read of writer %d's memory: %d waits, want %d", i, got, want)
		}
	}
	sync(t, reader)
	for _, w := range writers {
		sync(t, w)
	}
}

// Each MemPool call that the driver fails returns that failure, naming the
// call; MaxPoolSize bounds what the pool may hold.
func TestMemPoolDriverFailuresAndMaxSize(t *testing.T) {
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	p, err := cuda.NewMemPool(f.ctx.Device(), cuda.MaxPoolSize(1<<20))
	testenv.Must(t, err)
	defer p.Close()
	for _, c := range []struct {
		call string
		do   func() error
	}{
		{"cuDeviceGetDefaultMemPool", func() error { _, err := f.ctx.MemPool(); return err }},
		{"cuMemPoolCreate", func() error { _, err := cuda.NewMemPool(f.ctx.Device()); return err }},
		{"cuMemPoolGetAttribute", func() error { _, err := p.Usage(); return err }},
		{"cuMemPoolGetAttribute", func() error { _, err := p.ReleaseThreshold(); return err }},
		{"cuMemPoolSetAttribute", func() error { return p.SetReleaseThreshold(1) }},
		{"cuMemPoolSetAttribute", p.ResetHighWater},
		{"cuMemPoolTrimTo", func() error { return p.Trim(0) }},
		{"cuMemAllocFromPoolAsync", func() error { _, err := cuda.AllocFrom[byte](p, f.s, 1); return err }},
	} {
		testenv.SimFailNext(t, c.call, 1, libcuda.CUDA_ERROR_NOT_SUPPORTED)
		if err := c.do(); !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(err.Error(), c.call) {
			t.Errorf("with %s failing: %v, want its error", c.call, err)
		}
	}
	// The second of ResetHighWater's two calls failing fails it too.
	testenv.SimFailAfter(t, "cuMemPoolSetAttribute", 1, 1, libcuda.CUDA_ERROR_NOT_SUPPORTED)
	if err := p.ResetHighWater(); !errors.Is(err, cuda.ErrNotSupported) {
		t.Errorf("ResetHighWater with its second call failing: %v", err)
	}
	// An out of memory whose pool cannot be found is returned as it is.
	testenv.SimFailNext(t, "cuMemAllocAsync", 1, libcuda.CUDA_ERROR_OUT_OF_MEMORY)
	testenv.SimFailNext(t, "cuDeviceGetMemPool", 1, libcuda.CUDA_ERROR_UNKNOWN)
	if _, err := cuda.Alloc[byte](f.s, 1); !errors.Is(err, cuda.ErrOutOfMemory) {
		t.Errorf("Alloc with out of memory and no pool to trim: %v, want ErrOutOfMemory", err)
	}
	x, err := cuda.AllocFrom[byte](p, f.s, 1<<19)
	testenv.Must(t, err)
	if _, err := cuda.AllocFrom[byte](p, f.s, 1<<20); !errors.Is(err, cuda.ErrOutOfMemory) {
		t.Errorf("AllocFrom past MaxPoolSize: %v, want ErrOutOfMemory", err)
	}
	bounded(t, "x.Free", x.Free)
	testenv.SimFailNext(t, "cuMemPoolDestroy", 1, libcuda.CUDA_ERROR_NOT_SUPPORTED)
	if err := p.Close(); !errors.Is(err, cuda.ErrNotSupported) {
		t.Errorf("Close with cuMemPoolDestroy failing: %v", err)
	}
	var nilPool *cuda.MemPool
	if nilPool.Raw() != 0 || nilPool.Device() != (cuda.Device{}) {
		t.Error("a nil pool has a handle or a device")
	}
	// A dropped pool is destroyed, without an error logged.
	destroys := testenv.SimStat(t, "calls:cuMemPoolDestroy")
	func() {
		_, err := cuda.NewMemPool(f.ctx.Device())
		testenv.Must(t, err)
	}()
	testenv.Eventually(t, "the dropped pool destroyed", func() bool {
		runtime.GC()
		return testenv.SimStat(t, "calls:cuMemPoolDestroy") > destroys
	})
}

// Every value made from a Context holds the driver's context: after
// Context.Close the primary context stays retained until the value is
// closed too (or, for a closed stream's final event, collected). Each case
// runs in a fresh process, on the simulator's count of retains.
func TestValuesKeepTheContextAfterClose(t *testing.T) {
	retains := func(t *testing.T) int64 { return testenv.SimStat(t, "primary_retains:0") }
	cases := []struct {
		name string
		// make makes a value from ctx, returning what closes it; the
		// context is closed between the two.
		make func(t *testing.T, ctx *cuda.Context) (closeIt func())
	}{
		{"Stream", func(t *testing.T, ctx *cuda.Context) func() {
			s, err := ctx.NewStream()
			testenv.Must(t, err)
			return func() { bounded(t, "s.Close", s.Close) }
		}},
		{"NewEvent", func(t *testing.T, ctx *cuda.Context) func() {
			e, err := cuda.NewEvent(ctx)
			testenv.Must(t, err)
			return func() { bounded(t, "e.Close", e.Close) }
		}},
		{"Stream.Record", func(t *testing.T, ctx *cuda.Context) func() {
			events := testenv.SimStat(t, "live_events")
			func() {
				s, err := ctx.NewStream()
				testenv.Must(t, err)
				e, err := s.Record()
				testenv.Must(t, err)
				bounded(t, "s.Close", s.Close)
				closeEvent = e.Close
			}()
			// The stream's final event goes once the stream is collected:
			// then the recorded event alone holds the context.
			testenv.Eventually(t, "the stream's final event destroyed", func() bool {
				runtime.GC()
				return testenv.SimStat(t, "live_events") == events+1
			})
			return func() { testenv.Must(t, closeEvent()) }
		}},
		{"Module", func(t *testing.T, ctx *cuda.Context) func() {
			m, err := cuda.LoadModule(ctx, kernels.PTX)
			testenv.Must(t, err)
			return func() { bounded(t, "m.Close", m.Close) }
		}},
		{"Library.Module", func(t *testing.T, ctx *cuda.Context) func() {
			lib, err := cuda.LoadLibrary(kernels.TypedPTX)
			testenv.Must(t, err)
			m, err := lib.Module(ctx)
			testenv.Must(t, err)
			return func() { bounded(t, "m.Close", m.Close); bounded(t, "lib.Close", lib.Close) }
		}},
		{"Slice", func(t *testing.T, ctx *cuda.Context) func() {
			s, err := ctx.NewStream()
			testenv.Must(t, err)
			x, err := cuda.Alloc[int32](s, 64)
			testenv.Must(t, err)
			testenv.Must(t, s.Sync(testenv.Context(t)))
			return func() {
				live := testenv.SimStat(t, "live_allocations")
				bounded(t, "x.Free", x.Free)
				testenv.Eventually(t, "the Slice freed", func() bool { return testenv.SimStat(t, "live_allocations") < live })
				// The open stream still holds the context.
				if n := retains(t); n != 1 {
					t.Errorf("after the Slice's Free, with its stream open: %d retains, want 1", n)
				}
				bounded(t, "s.Close", s.Close)
			}
		}},
		{"Pinned", func(t *testing.T, ctx *cuda.Context) func() {
			p, err := cuda.AllocPinned[int32](ctx, 1024)
			testenv.Must(t, err)
			return func() { bounded(t, "p.Free", p.Free) }
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !testenv.InChild(t) {
				return
			}
			testenv.NoErrorsLogged(t)
			devs, err := cuda.Devices()
			testenv.Must(t, err)
			ctx, err := devs[0].Context()
			testenv.Must(t, err)
			closeIt := c.make(t, ctx)
			bounded(t, "ctx.Close", ctx.Close)
			if n := retains(t); n != 1 {
				t.Fatalf("after Context.Close with a %s open: %d retains, want 1", c.name, n)
			}
			closeIt()
			testenv.Must(t, hostmem.Drain(testenv.Context(t)))
			testenv.Eventually(t, "the primary context released", func() bool {
				runtime.GC()
				return retains(t) == 0
			})
		})
	}
}

// closeEvent closes the event that TestValuesKeepTheContextAfterClose's
// Stream.Record case recorded (set in the child process).
var closeEvent func() error

// A failure to give the thread back its own context after Stream.Do is
// Do's error, joined with f's.
func TestDoReportsTheFailureToRestoreTheThreadsContext(t *testing.T) {
	f := newFixture(t)
	other := otherContext(t, f)
	testenv.OnThread(t, other)
	x, err := cuda.Alloc[float32](f.s, 4)
	testenv.Must(t, err)
	defer x.Free()
	ops := [1]cuda.Operand{x.Operand(cuda.Read)}
	boom := errors.New("boom")
	for _, fErr := range []error{nil, boom} {
		// The first cuCtxSetCurrent makes the stream's context current,
		// the second gives the thread its own back: it fails.
		testenv.SimFailAfter(t, "cuCtxSetCurrent", 1, 1, libcuda.CUDA_ERROR_UNKNOWN)
		err := f.s.Do("lib", ops[:], func(libcuda.Stream) error { return fErr })
		if !errors.Is(err, libcuda.CUDA_ERROR_UNKNOWN) || (fErr != nil && !errors.Is(err, fErr)) {
			t.Errorf("Do returning %v with the restore failing: %v, want both errors", fErr, err)
		}
		testenv.Must(t, libcuda.CtxSetCurrent(other))
	}
}

// A use that must wait for another stream fails with the driver's error
// when the event it waits for cannot be made or recorded on that stream,
// and the next use tries again (and waits).
func TestOrderingFailureIsTheUsesError(t *testing.T) {
	f := newFixture(t)
	a := newStream(t, f.ctx, cuda.NonBlocking())
	b := newStream(t, f.ctx, cuda.NonBlocking())
	for _, call := range []string{"cuEventCreate", "cuEventRecord", "cuStreamWaitEvent"} {
		t.Run(call, func(t *testing.T) {
			x := alloc(t, a, make([]float32, 4))
			ops := [1]cuda.Operand{x.Operand(cuda.Read)}
			if call == "cuEventCreate" {
				// a's order event exists after its first use: a stream
				// of its own, whose event is not made yet.
				c := newStream(t, f.ctx, cuda.NonBlocking())
				x = alloc(t, c, make([]float32, 4))
				ops[0] = x.Operand(cuda.Read)
			}
			testenv.SimFailNext(t, call, 1, libcuda.CUDA_ERROR_UNKNOWN)
			err := b.Do("read", ops[:], func(libcuda.Stream) error { return nil })
			if !errors.Is(err, libcuda.CUDA_ERROR_UNKNOWN) || !strings.Contains(err.Error(), call) {
				t.Errorf("a read waiting for another stream with %s failing: %v, want its error", call, err)
			}
			waits := testenv.CountThreadCalls(t, func() {
				testenv.Must(t, b.Do("read", ops[:], func(libcuda.Stream) error { return nil }))
			})["cuStreamWaitEvent"]
			if waits != 1 {
				t.Errorf("the next read: %d waits, want 1 (the failed one did not wait)", waits)
			}
			sync(t, b)
		})
	}
}
