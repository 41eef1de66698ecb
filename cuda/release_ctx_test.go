package cuda_test

import (
	"runtime"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// releaseUse is one kind of use of a Context: it makes values from ctx (and
// s, a stream of it that the test closes), uses them and closes every one.
type releaseUse struct {
	name string
	use  func(t *testing.T, ctx *cuda.Context, s *cuda.Stream)
}

var releaseUses = []releaseUse{
	{"nothing", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {}},
	{"Slice", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		x, err := cuda.Alloc[int32](s, 64)
		testenv.Must(t, err)
		testenv.Must(t, cuda.Memset(s, x, 1))
		bounded(t, "x.Free", x.Free)
	}},
	{"Slice on two streams", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		// The second stream waits for the first through its order event.
		s2, err := ctx.NewStream(cuda.NonBlocking())
		testenv.Must(t, err)
		x, err := cuda.Alloc[int32](s, 64)
		testenv.Must(t, err)
		testenv.Must(t, cuda.Memset(s, x, 1))
		testenv.Must(t, cuda.Memset(s2, x, 2))
		testenv.Must(t, cuda.Memset(s, x, 3))
		bounded(t, "x.Free", x.Free)
		testenv.Must(t, s2.Sync(testenv.Context(t)))
		bounded(t, "s2.Close", s2.Close)
	}},
	{"Event", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		e, err := s.Record()
		testenv.Must(t, err)
		testenv.Must(t, e.Sync(testenv.Context(t)))
		bounded(t, "e.Close", e.Close)
		e2, err := cuda.NewEvent(ctx, cuda.DisableTiming())
		testenv.Must(t, err)
		testenv.Must(t, s.RecordEvent(e2))
		testenv.Must(t, s.Wait(e2))
		bounded(t, "e2.Close", e2.Close)
	}},
	{"Module", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		mod, err := cuda.LoadModule(ctx, kernels.PTX)
		testenv.Must(t, err)
		if _, err := mod.Func("add_one_i32"); err != nil {
			t.Fatal(err)
		}
		bounded(t, "mod.Close", mod.Close)
	}},
	{"launch", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		mod, err := cuda.LoadModule(ctx, kernels.PTX)
		testenv.Must(t, err)
		add, err := mod.Func("add_one_i32")
		testenv.Must(t, err)
		x, err := cuda.Alloc[int32](s, 64)
		testenv.Must(t, err)
		testenv.Must(t, cuda.Zero(s, x))
		testenv.Must(t, s.Launch(add, cuda.Grid(1, 1, 1), cuda.Block(64, 1, 1), x.Arg(), cuda.Uint64(64)))
		testenv.Must(t, s.LaunchWith(add, cuda.Config{Grid: cuda.Grid(1, 1, 1), Block: cuda.Block(64, 1, 1), Priority: 1}, x.Arg(), cuda.Uint64(64)))
		got := make([]int32, 64)
		testenv.Must(t, cuda.CopyToHost(s, got, x))
		if got[63] != 2 {
			t.Fatalf("after two launches x[63] = %d, want 2", got[63])
		}
		bounded(t, "x.Free", x.Free)
		bounded(t, "mod.Close", mod.Close)
	}},
	{"Global", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		mod, err := cuda.LoadModule(ctx, kernels.TypedPTX)
		testenv.Must(t, err)
		bias, err := cuda.Global[float32](mod, "bias")
		testenv.Must(t, err)
		testenv.Must(t, cuda.CopyToDevice(s, bias, []float32{1}))
		testenv.Must(t, s.Sync(testenv.Context(t)))
		bounded(t, "mod.Close", mod.Close)
	}},
	{"capture and graph launch", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		mod, err := cuda.LoadModule(ctx, kernels.PTX)
		testenv.Must(t, err)
		add, err := mod.Func("add_one_i32")
		testenv.Must(t, err)
		x, err := cuda.Alloc[int32](s, 64)
		testenv.Must(t, err)
		testenv.Must(t, cuda.Zero(s, x))
		g, err := s.Capture(func(s *cuda.Stream) error {
			return s.Launch(add, cuda.Grid(1, 1, 1), cuda.Block(64, 1, 1), x.Arg(), cuda.Uint64(64))
		})
		testenv.Must(t, err)
		e, err := g.Instantiate()
		testenv.Must(t, err)
		testenv.Must(t, s.LaunchGraph(e))
		testenv.Must(t, s.Sync(testenv.Context(t)))
		testenv.Must(t, e.Destroy())
		testenv.Must(t, g.Destroy())
		bounded(t, "x.Free", x.Free)
		bounded(t, "mod.Close", mod.Close)
	}},
	{"RunCached", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		x, err := cuda.Alloc[int32](s, 64)
		testenv.Must(t, err)
		c := cuda.NewCached(cuda.DefaultCaptureMode)
		for v := range int32(2) {
			testenv.Must(t, s.RunCached(c, func(s *cuda.Stream) error { return cuda.Memset(s, x, v) }))
		}
		testenv.Must(t, s.Sync(testenv.Context(t)))
		bounded(t, "c.Close", c.Close)
		bounded(t, "x.Free", x.Free)
	}},
	{"host function", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		ran := make(chan struct{}, 2)
		testenv.Must(t, s.HostFunc(func() { ran <- struct{}{} }))
		testenv.Must(t, s.HostFuncOnDriverThread(func() { ran <- struct{}{} }))
		testenv.Must(t, s.Sync(testenv.Context(t)))
		testenv.Recv(t, ran, "the host function")
		testenv.Recv(t, ran, "the host function on the driver's thread")
	}},
	{"captured host function", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		ran := make(chan struct{}, 1)
		g, err := s.Capture(func(s *cuda.Stream) error { return s.HostFunc(func() { ran <- struct{}{} }) })
		testenv.Must(t, err)
		e, err := g.Instantiate()
		testenv.Must(t, err)
		testenv.Must(t, s.LaunchGraph(e))
		testenv.Must(t, s.Sync(testenv.Context(t)))
		testenv.Recv(t, ran, "the captured host function")
		testenv.Must(t, e.Destroy())
		testenv.Must(t, g.Destroy())
	}},
	{"pinned memory", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		p, err := cuda.AllocPinned[int32](ctx, 1024)
		testenv.Must(t, err)
		host := make([]int32, 2048)
		q, err := cuda.Pin(ctx, host)
		testenv.Must(t, err)
		x, err := cuda.Alloc[int32](s, 1024)
		testenv.Must(t, err)
		testenv.Must(t, cuda.CopyToDevice(s, x, p))
		testenv.Must(t, cuda.CopyToHost(s, q.Data()[:1024], x))
		testenv.Must(t, s.Sync(testenv.Context(t)))
		bounded(t, "x.Free", x.Free)
		bounded(t, "p.Free", p.Free)
		bounded(t, "q.Free", q.Free)
	}},
	{"managed memory", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		m, err := cuda.AllocManaged[int32](ctx, 1024, cuda.AttachGlobal)
		testenv.Must(t, err)
		testenv.Must(t, cuda.Memset(s, m.Slice(), 7))
		testenv.Must(t, m.Prefetch(s, cuda.OnDevice(ctx.Device())))
		testenv.Must(t, s.Sync(testenv.Context(t)))
		bounded(t, "m.Free", m.Free)
	}},
	{"memory pool", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		pool, err := cuda.NewMemPool(ctx.Device())
		testenv.Must(t, err)
		x, err := cuda.AllocFrom[int32](pool, s, 64)
		testenv.Must(t, err)
		testenv.Must(t, cuda.Zero(s, x))
		bounded(t, "x.Free", x.Free)
		testenv.Must(t, s.Sync(testenv.Context(t)))
		bounded(t, "pool.Close", pool.Close)
		def, err := ctx.MemPool()
		testenv.Must(t, err)
		testenv.Must(t, def.Trim(0))
	}},
	{"Library", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		lib, err := cuda.LoadLibrary(kernels.TypedPTX)
		testenv.Must(t, err)
		mod, err := lib.Module(ctx)
		testenv.Must(t, err)
		addBias, err := mod.Func("add_bias")
		testenv.Must(t, err)
		y, err := cuda.Alloc[float32](s, 2)
		testenv.Must(t, err)
		testenv.Must(t, cuda.Zero(s, y))
		testenv.Must(t, s.Launch(addBias, cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), y.Arg(), cuda.Int32(2)))
		testenv.Must(t, s.Sync(testenv.Context(t)))
		bounded(t, "y.Free", y.Free)
		bounded(t, "mod.Close", mod.Close)
		bounded(t, "lib.Close", lib.Close)
	}},
	{"Linker", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		var l cuda.Linker
		testenv.Must(t, l.AddPTX("kernels.ptx", kernels.PTX))
		image, err := l.Link(ctx)
		testenv.Must(t, err)
		var bad cuda.Linker
		testenv.Must(t, bad.AddPTX("bad.ptx", []byte(badPTX)))
		if _, err := bad.Link(ctx); err == nil {
			t.Fatal("linking bad PTX: no error")
		}
		mod, err := cuda.LoadModule(ctx, image)
		testenv.Must(t, err)
		bounded(t, "mod.Close", mod.Close)
	}},
	{"Stream.Do and ContextHold", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		x, err := cuda.Alloc[int32](s, 64)
		testenv.Must(t, err)
		testenv.Must(t, s.Do("memset", []cuda.Operand{x.Operand(cuda.Write)}, func(raw libcuda.Stream) error { return nil }))
		h, err := s.HoldContext()
		testenv.Must(t, err)
		testenv.Must(t, h.Do(func() error { return nil }))
		bounded(t, "x.Free", x.Free)
		testenv.Must(t, h.Release())
	}},
	{"Context.Do and Sync", func(t *testing.T, ctx *cuda.Context, s *cuda.Stream) {
		testenv.Must(t, ctx.Do(func() error { return nil }))
		testenv.Must(t, ctx.Sync(testenv.Context(t)))
		if _, _, err := ctx.MemInfo(); err != nil {
			t.Fatal(err)
		}
	}},
}

// Once a program has closed every value it made from a Context and
// hostmem.Drain has returned, the device's primary context is released
// (cuDevicePrimaryCtxGetState says inactive), whatever the values were:
// streams, events, modules, Slices, pinned and managed memory, pools,
// libraries, launches, captures and host functions. Values closed but
// still reachable inside package cuda (a stream's state, a Func in the
// launch history) would keep it: the test drops its own references and
// runs the collector, which a long-running program does by itself. Each
// case runs in a fresh process, where no other test holds the context; on
// the simulator the count of retains is checked too.
func TestClosingEverythingReleasesThePrimaryContext(t *testing.T) {
	for _, u := range releaseUses {
		t.Run(u.name, func(t *testing.T) {
			if !testenv.InChild(t) {
				return
			}
			devs, err := cuda.Devices()
			testenv.Must(t, err)
			if len(devs) == 0 {
				t.Fatal("no device")
			}
			d := devs[0]
			if primaryActive(t, d) {
				t.Fatal("the primary context is active before the test made a Context")
			}
			func() {
				ctx, err := d.Context()
				testenv.Must(t, err)
				s, err := ctx.NewStream()
				testenv.Must(t, err)
				u.use(t, ctx, s)
				testenv.Must(t, s.Sync(testenv.Context(t)))
				bounded(t, "s.Close", s.Close)
				bounded(t, "ctx.Close", ctx.Close)
			}()
			testenv.Must(t, hostmem.Drain(testenv.Context(t)))
			testenv.Eventually(t, "the primary context released", func() bool {
				runtime.GC()
				return !primaryActive(t, d)
			})
			if n, ok := testenv.Stat(t, "primary_retains:0"); ok && n != 0 {
				t.Fatalf("the simulator counts %d retains of the primary context, want 0", n)
			}
		})
	}
}

// primaryActive says whether d's primary context is retained by anyone
// (cuDevicePrimaryCtxGetState).
func primaryActive(t *testing.T, d cuda.Device) bool {
	t.Helper()
	var flags uint32
	var active int32
	testenv.Must(t, libcuda.DevicePrimaryCtxGetState(d.Raw(), &flags, &active))
	return active != 0
}
