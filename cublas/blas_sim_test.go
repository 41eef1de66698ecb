//go:build !gpu

package cublas_test

import (
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// New creates a handle in the stand-in, Close destroys it (once no
// capture is in progress: at once here), and every use after Close is
// ErrClosed.
func TestHandleLifetime(t *testing.T) {
	f := newFixture(t)
	creates := testenv.BLASStat(t, "creates")
	h, err := cublas.New(f.s)
	testenv.Must(t, err)
	if n := testenv.BLASStat(t, "creates"); n != creates+1 || !testenv.BLASLive(t, uintptr(h.Raw())) {
		t.Fatalf("%d creates by New, want 1, and a live handle", n-creates)
	}
	x := upload(t, f.s, []float32{1, 2})
	testenv.MustBounded(t, "h.Close", h.Close)
	testenv.Eventually(t, "the destroy", func() bool { return !testenv.BLASLive(t, uintptr(h.Raw())) })
	if err := testenv.BoundedErr(t, "h.Close", h.Close); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	if err := testenv.BoundedErr(t, "cublas.Axpy", func() error { return cublas.Axpy(h, 2, 1, x, 1, x, 1) }); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Axpy after Close: %v", err)
	}
	if err := testenv.BoundedErr(t, "h.MathMode", func() error { _, err := h.MathMode(); return err }); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("MathMode after Close: %v", err)
	}
	if err := testenv.BoundedErr(t, "h.SetStream", func() error { return h.SetStream(f.s) }); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("SetStream after Close: %v", err)
	}
	var nilH *cublas.BLAS
	if err := cublas.Axpy(nilH, 2, 1, x, 1, x, 1); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("Axpy on a nil handle: %v", err)
	}
	if _, err := cublas.New(nil); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("New(nil): %v", err)
	}
}

// A handle outlives the Stream and Context it was made on until Close:
// its context is held, and closing it afterwards destroys it cleanly.
func TestHandleClosedAfterItsStreamAndContext(t *testing.T) {
	testenv.NoErrorsLogged(t)
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	s, err := ctx.NewStream()
	testenv.Must(t, err)
	h, err := cublas.New(s)
	testenv.Must(t, err)
	x, err := cuda.Alloc[float32](s, 2)
	testenv.Must(t, err)
	testenv.MustBounded(t, "s.Close", s.Close)
	testenv.MustBounded(t, "ctx.Close", ctx.Close)
	if err := testenv.BoundedErr(t, "cublas.Axpy", func() error { return cublas.Axpy(h, 2, 2, x, 1, x, 1) }); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("a call on a handle whose stream is closed: %v", err)
	}
	testenv.MustBounded(t, "h.Close", h.Close)
	testenv.MustBounded(t, "x.Free", x.Free)
	testenv.Eventually(t, "the destroy", func() bool { return !testenv.BLASLive(t, uintptr(h.Raw())) })
}

// A handle dropped without Close is destroyed by the garbage collector.
func TestDroppedHandleIsDestroyed(t *testing.T) {
	f := newFixture(t)
	raw := func() uintptr {
		h, err := cublas.New(f.s)
		testenv.Must(t, err)
		return uintptr(h.Raw())
	}()
	testenv.Eventually(t, "the collected handle's destroy", func() bool {
		runtime.GC()
		return !testenv.BLASLive(t, raw)
	})
}

// cublasSetStream drops the handle's workspace: SetStream sets it again,
// and only when there is one.
func TestSetStreamSetsTheWorkspaceAgain(t *testing.T) {
	f := newFixture(t)
	other := newStream(t, f.ctx)
	ws0 := testenv.BLASStat(t, "set_workspace")
	testenv.Must(t, f.h.SetStream(other))
	if n := testenv.BLASStat(t, "set_workspace"); n != ws0 {
		t.Errorf("SetStream without a workspace set one (%d)", n-ws0)
	}
	ws, err := cuda.Alloc[byte](f.s, 1<<20)
	testenv.Must(t, err)
	testenv.Must(t, f.h.SetWorkspace(ws))
	testenv.Must(t, f.h.SetStream(f.s))
	if n := testenv.BLASStat(t, "set_workspace"); n != ws0+2 {
		t.Errorf("%d workspace sets, want 2 (SetWorkspace, then SetStream's)", n-ws0)
	}
	if f.h.Stream() != f.s {
		t.Error("Stream is not the one set")
	}
	// The handle works on its new stream, and the workspace is in use
	// until the handle lets it go.
	x := upload(t, f.s, []float32{1, 2})
	testenv.Must(t, cublas.Axpy(f.h, 2, 2, x, 1, x, 1))
	if got := download(t, f.s, x); got[0] != 3 || got[1] != 6 {
		t.Errorf("x = %v", got)
	}
	testenv.Must(t, f.h.SetWorkspace(cuda.Slice[byte]{}))
	testenv.MustBounded(t, "ws.Free", ws.Free)
}

// A call records the stream on its Slices: Free of C waits for the Gemm.
func TestGemmRecordsItsSlices(t *testing.T) {
	testenv.OnPrimary(t, 0)
	f := newFixture(t)
	gate := testenv.NewGate(t)
	a := upload(t, f.s, []float32{1, 2, 3, 4})
	home := newStream(t, f.ctx)
	c, err := cuda.Alloc[float32](home, 4)
	testenv.Must(t, err)
	testenv.MustBounded(t, "f.ctx.Sync", func() error { return f.ctx.Sync(testenv.Context(t)) }) // earlier frees are done: the count moves only for this one
	base := testenv.SimStat(t, "live_allocations")
	gate.Hold(t, f.s.Raw())
	testenv.Must(t, cublas.Gemm(f.h, cublas.NoTrans, cublas.NoTrans, 2, 2, 2, 1, a, 2, a, 2, 0, c, 2))
	testenv.MustBounded(t, "c.Free", c.Free)
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if n := testenv.SimStat(t, "live_allocations"); n != base {
			t.Fatalf("C freed while the Gemm's stream is held (%d live, want %d)", n, base)
		}
	}
	gate.Open()
	testenv.Eventually(t, "the free", func() bool { return testenv.SimStat(t, "live_allocations") == base-1 })
}

// A shape error submits nothing.
func TestShapeErrorSubmitsNothing(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, make([]float32, 4))
	calls := testenv.BLASStat(t, "calls")
	if err := cublas.Gemm(f.h, cublas.NoTrans, cublas.NoTrans, 3, 3, 3, 1, x, 3, x, 3, 0, x, 3); !errors.Is(err, cublas.ErrShape) {
		t.Fatalf("got %v", err)
	}
	testenv.Must(t, cublas.Axpy(f.h, 4, 1, x, 1, x, 1))
	if n := testenv.BLASStat(t, "calls"); n != calls+1 {
		t.Errorf("%d calls reached the library, want the Axpy's 1", n-calls)
	}
}

// A call made from a thread whose current context is another one, or
// none, still runs in the stream's context (package cuda's Stream.Do makes
// it current for the call): the stand-in refuses work whose stream's
// context is not current, as cuBLAS launches through the runtime into the
// current context. The thread's own context is left as it was.
func TestCallFromAThreadWithAnotherContextRunsInTheStreams(t *testing.T) {
	f := newFixture(t)
	a := upload(t, f.s, []float32{1, 2, 3, 4}) // 2x2, column-major
	c := upload(t, f.s, make([]float32, 4))
	var other libcuda.Context
	testenv.Must(t, f.ctx.Do(func() error {
		if err := libcuda.CtxCreate(&other, nil, 0, f.ctx.Device().Raw()); err != nil {
			return err
		}
		var popped libcuda.Context
		return libcuda.CtxPopCurrent(&popped)
	}))
	t.Cleanup(func() { testenv.Must(t, libcuda.CtxDestroy(other)) })
	for _, cur := range []struct {
		name string
		ctx  libcuda.Context
	}{{"another context current", other}, {"no context current", 0}} {
		wrong := testenv.BLASStat(t, "wrong_context")
		runtime.LockOSThread()
		var prev libcuda.Context
		testenv.Must(t, libcuda.CtxGetCurrent(&prev))
		testenv.Must(t, libcuda.CtxSetCurrent(cur.ctx))
		err := cublas.Gemm(f.h, cublas.NoTrans, cublas.NoTrans, 2, 2, 2, 1, a, 2, a, 2, 0, c, 2)
		var after libcuda.Context
		testenv.Must(t, libcuda.CtxGetCurrent(&after))
		testenv.Must(t, libcuda.CtxSetCurrent(prev))
		runtime.UnlockOSThread()
		if err != nil {
			t.Errorf("%s: Gemm: %v", cur.name, err)
		}
		if n := testenv.BLASStat(t, "wrong_context") - wrong; n != 0 {
			t.Errorf("%s: %d calls ran with another context than the stream's current", cur.name, n)
		}
		if cur.ctx != 0 && after != cur.ctx {
			t.Errorf("%s: after the call the thread's context is %#x, want %#x as before", cur.name, after, cur.ctx)
		}
		// A*A of [[1 3] [2 4]] (rows): [[7 15] [10 22]], column-major.
		if got := download(t, f.s, c); !slices.Equal(got, []float32{7, 10, 15, 22}) {
			t.Errorf("%s: C = %v, want [7 10 15 22]", cur.name, got)
		}
	}
}
