package cuda_test

import (
	"errors"
	"fmt"
	gosync "sync"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

func TestDevicesReportNameCapabilityAndMemory(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	if len(devs) == 0 {
		t.Fatal("Devices returned none")
	}
	for i, d := range devs {
		if d.Ordinal() != i {
			t.Errorf("device %d: Ordinal %d", i, d.Ordinal())
		}
		name, err := d.Name()
		testenv.Must(t, err)
		if name == "" {
			t.Errorf("device %d: empty name", i)
		}
		major, minor, err := d.ComputeCapability()
		testenv.Must(t, err)
		if major < 5 || minor < 0 {
			t.Errorf("device %d: compute capability %d.%d", i, major, minor)
		}
		arch, err := d.Arch()
		testenv.Must(t, err)
		varch, err := d.VirtualArch()
		testenv.Must(t, err)
		if want := fmt.Sprintf("sm_%d%d", major, minor); arch != want {
			t.Errorf("device %d: Arch %q, want %q", i, arch, want)
		}
		if want := fmt.Sprintf("compute_%d%d", major, minor); varch != want {
			t.Errorf("device %d: VirtualArch %q, want %q", i, varch, want)
		}
		mem, err := d.TotalMemory()
		testenv.Must(t, err)
		if mem == 0 {
			t.Errorf("device %d: no memory", i)
		}
		for _, a := range []func() (int, error){d.MultiprocessorCount, d.MaxThreadsPerBlock, d.WarpSize} {
			v, err := a()
			testenv.Must(t, err)
			if v <= 0 {
				t.Errorf("device %d: attribute %d", i, v)
			}
		}
		v, err := d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
		testenv.Must(t, err)
		if v != major {
			t.Errorf("Attribute(major) = %d, ComputeCapability %d", v, major)
		}
	}
}

func TestContextUseAfterCloseIsAnError(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	testenv.MustBounded(t, "ctx.Close", ctx.Close)
	if err := testenv.BoundedErr(t, "ctx.Close", ctx.Close); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
	if _, err := ctx.NewStream(); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("NewStream after Close: %v, want ErrClosed", err)
	}
	if _, err := cuda.LoadModule(ctx, []byte("x")); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("LoadModule after Close: %v, want ErrClosed", err)
	}
	if err := testenv.BoundedErr(t, "ctx.Do", func() error { return ctx.Do(func() error { return nil }) }); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Do after Close: %v, want ErrClosed", err)
	}
	var nilCtx *cuda.Context
	if _, err := nilCtx.NewStream(); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("NewStream on a nil Context: %v, want ErrNil", err)
	}
}

// A stream outlives the Context it was made from: the driver's context is
// released only when the stream is closed.
func TestStreamKeepsTheContextAfterContextClose(t *testing.T) {
	f := newFixture(t)
	ctx2, err := f.ctx.Device().Context()
	testenv.Must(t, err)
	s, err := ctx2.NewStream()
	testenv.Must(t, err)
	testenv.MustBounded(t, "ctx2.Close", ctx2.Close)
	x, err := cuda.Alloc[float32](s, 4)
	testenv.Must(t, err)
	testenv.Must(t, cuda.Memset(s, x, 1.5))
	got := make([]float32, 4)
	testenv.Must(t, cuda.CopyToHost(s, got, x))
	if got[3] != 1.5 {
		t.Errorf("got %v", got)
	}
	testenv.MustBounded(t, "x.Free", x.Free)
	testenv.MustBounded(t, "s.Close", s.Close)
}

func TestContextDoMakesItCurrentAndRestores(t *testing.T) {
	f := newFixture(t)
	th := testenv.NewOSThread(t, 0)
	th.Do(func() {
		var cur libcuda.Context
		testenv.Must(t, f.ctx.Do(func() error { return libcuda.CtxGetCurrent(&cur) }))
		if cur != f.ctx.Raw() {
			t.Errorf("inside Do the current context is %#x, want %#x", cur, f.ctx.Raw())
		}
		testenv.Must(t, libcuda.CtxGetCurrent(&cur))
		if cur != 0 {
			t.Errorf("after Do the thread has %#x current, want none again", cur)
		}
	})
}

// A call on a thread with another context current gives it back; on a
// thread with none, the Context stays current (documented).
func TestCallsRestoreAnotherCurrentContext(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, []float32{1, 2})
	other := otherContext(t, f)

	th := testenv.NewOSThread(t, other)
	th.Do(func() {
		testenv.Must(t, cuda.Memset(f.s, x, 3))
		var cur libcuda.Context
		testenv.Must(t, libcuda.CtxGetCurrent(&cur))
		if cur != other {
			t.Errorf("after a call the thread has %#x current, want its own %#x", cur, other)
		}
		testenv.Must(t, libcuda.CtxSetCurrent(0)) // before other is destroyed
	})
	bare := testenv.NewOSThread(t, 0)
	bare.Do(func() {
		testenv.Must(t, cuda.Memset(f.s, x, 4))
		var cur libcuda.Context
		testenv.Must(t, libcuda.CtxGetCurrent(&cur))
		if cur != f.ctx.Raw() {
			t.Errorf("after a call on a bare thread %#x is current, want the Context's %#x", cur, f.ctx.Raw())
		}
	})
	if got := read(t, f.s, x); got[0] != 4 || got[1] != 4 {
		t.Errorf("got %v, want [4 4]", got)
	}
}

// Methods of nil values return errors or zero values; none crashes.
func TestNilValuesDoNotCrash(t *testing.T) {
	var (
		c  *cuda.Context
		s  *cuda.Stream
		e  *cuda.Event
		m  *cuda.Module
		fn *cuda.Func
		p  *cuda.Pinned[float32]
	)
	if c.Raw() != 0 || s.Raw() != 0 || e.Raw() != 0 || m.Raw() != 0 || fn.Raw() != 0 || fn.Name() != "" || p.Data() != nil || p.Len() != 0 {
		t.Error("a nil value has a handle or data")
	}
	if _, ok := fn.Params(); ok {
		t.Error("a nil Func has parameters")
	}
	for name, err := range map[string]error{
		"Context.Close": c.Close(),
		"Stream.Close":  s.Close(),
		"Event.Close":   e.Close(),
		"Module.Close":  m.Close(),
		"Pinned.Free":   p.Free(),
		"Stream.Wait":   s.Wait(e),
	} {
		if !errors.Is(err, cuda.ErrNil) {
			t.Errorf("%s: %v, want ErrNil", name, err)
		}
	}
	if _, err := m.Func("x"); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("Module.Func: %v, want ErrNil", err)
	}
	if _, err := e.Query(); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("Event.Query: %v, want ErrNil", err)
	}
	if _, err := cuda.Elapsed(e, e); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("Elapsed: %v, want ErrNil", err)
	}
}

// Zero values made with new or a literal behave as nil ones.
func TestZeroValuesDoNotCrash(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, []float32{1})
	zs, zf, zp := new(cuda.Stream), new(cuda.Func), new(cuda.Pinned[float32])
	for name, err := range map[string]error{
		"Context.Close":         new(cuda.Context).Close(),
		"Stream.Sync":           zs.Sync(testenv.Context(t)),
		"Event.Close":           new(cuda.Event).Close(),
		"Module.Close":          new(cuda.Module).Close(),
		"Launch zero Func":      f.s.Launch(zf, cuda.Grid(1, 1, 1), cuda.Block(1, 1, 1)),
		"Launch on zero Stream": zs.Launch(f.fn(t, "saxpy"), cuda.Grid(1, 1, 1), cuda.Block(1, 1, 1)),
		"copy from zero Pinned": cuda.CopyToDevice(f.s, x, zp),
		"copy from zero Buffer": cuda.CopyToDevice(f.s, x, new(hostmem.Buffer)),
		"Pinned.Free":           zp.Free(),
	} {
		if !errors.Is(err, cuda.ErrNil) {
			t.Errorf("%s: %v, want ErrNil", name, err)
		}
	}
	if _, err := zf.Attribute(libcuda.CU_FUNC_ATTRIBUTE_NUM_REGS); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("Attribute of a zero Func: %v, want ErrNil", err)
	}
}

// Streams made while another goroutine closes the Context either work or
// fail with ErrClosed; the driver's context is released once, after the
// last of them is closed.
func TestContextCloseRacesWithNewStream(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	for range 20 {
		ctx, err := devs[0].Context()
		testenv.Must(t, err)
		streams := make(chan *cuda.Stream, 8)
		errs := make(chan error, 8)
		var wg gosync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := ctx.NewStream()
				if err != nil {
					errs <- err
					return
				}
				streams <- s
			}()
		}
		testenv.MustBounded(t, "ctx.Close", ctx.Close)
		testenv.Recv(t, testenv.Go(wg.Wait), "the NewStreams")
		close(streams)
		close(errs)
		for err := range errs {
			if !errors.Is(err, cuda.ErrClosed) {
				t.Errorf("NewStream beside Close: %v", err)
			}
		}
		for s := range streams {
			x, err := cuda.Alloc[int32](s, 4)
			testenv.Must(t, err)
			testenv.Must(t, cuda.Memset(s, x, 7))
			if got := read(t, s, x); got[3] != 7 {
				t.Errorf("a stream of a closed Context: %v", got)
			}
			testenv.MustBounded(t, "x.Free", x.Free)
			testenv.MustBounded(t, "s.Close", s.Close)
		}
	}
}
