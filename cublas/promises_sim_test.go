//go:build !gpu

package cublas_test

import (
	"errors"
	"github.com/purecuda/purecuda/graph"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// testenvCalls is the stand-in's count of calls that reached it.
func testenvCalls(t testing.TB) int64 { return testenv.BLASStat(t, "calls") }

// cuBLAS statuses the stand-in is made to fail with.
const (
	statusAllocFailed   = int(cublas.CUBLAS_STATUS_ALLOC_FAILED)
	statusInternalError = int(cublas.CUBLAS_STATUS_INTERNAL_ERROR)
)

// A New that fails leaves nothing behind: no handle (one made before
// cublasSetStream failed is destroyed), and the Context and Stream close
// cleanly. (Whether the context's hold is released cannot be seen here:
// a closed Stream keeps the primary context retained today, issue 38
// item 5.)
func TestNewThatFailsLeavesNothingBehind(t *testing.T) {
	for _, c := range []struct {
		fail, want string
		status     int
	}{
		{"cublasCreate_v2", "cublasCreate_v2", statusAllocFailed},
		{"cublasSetStream_v2", "cublasSetStream_v2", statusInternalError},
	} {
		t.Run(c.fail, func(t *testing.T) {
			testenv.NoErrorsLogged(t)
			devs, err := cuda.Devices()
			testenv.Must(t, err)
			ctx, err := devs[0].Context()
			testenv.Must(t, err)
			s, err := ctx.NewStream()
			testenv.Must(t, err)
			settle(t) // the destroys of earlier tests' handles are done
			live, creates, destroys := testenv.BLASStat(t, "live_handles"), testenv.BLASStat(t, "creates"), testenv.BLASStat(t, "destroys")
			testenv.BLASFailNext(t, c.fail, 1, c.status)
			h, err := cublas.New(s)
			if h != nil || !errors.Is(err, cublas.Status(c.status)) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("New = %v, %v; want nil and %v naming %s", h, err, cublas.Status(c.status), c.want)
			}
			if n := testenv.BLASStat(t, "live_handles"); n != live {
				t.Errorf("%d live handles after the failed New, want %d", n, live)
			}
			if made := testenv.BLASStat(t, "creates") - creates; made != testenv.BLASStat(t, "destroys")-destroys {
				t.Errorf("%d handles made, %d destroyed", made, testenv.BLASStat(t, "destroys")-destroys)
			}
			testenv.Must(t, s.Close())
			testenv.Must(t, ctx.Close())
		})
	}
}

// A handle whose stream could not be set and whose destroy then failed
// too: New fails with the first error, and the second is logged.
func TestNewLogsADestroyThatFailsAfterSetStreamFailed(t *testing.T) {
	f := newFixture(t)
	log := testenv.CaptureErrors(t)
	testenv.BLASFailNext(t, "cublasSetStream_v2", 1, statusInternalError)
	testenv.BLASFailNext(t, "cublasDestroy_v2", 1, statusInternalError)
	if _, err := cublas.New(f.s); !errors.Is(err, cublas.CUBLAS_STATUS_INTERNAL_ERROR) || !strings.Contains(err.Error(), "cublasSetStream_v2") {
		t.Errorf("New: %v", err)
	}
	if msgs := log.Messages(); len(msgs) != 1 || !strings.Contains(msgs[0], "stream could not be set") {
		t.Errorf("logged %q, want the failed destroy", msgs)
	}
}

// A handle keeps its stream's context alive after the Stream and the
// Context are closed, and works there (its MathMode runs in that
// context); Close destroys it there without an error.
func TestHandleHoldsItsContextUntilClose(t *testing.T) {
	testenv.NoErrorsLogged(t)
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	s, err := ctx.NewStream()
	testenv.Must(t, err)
	h, err := cublas.New(s)
	testenv.Must(t, err)
	testenv.Must(t, h.SetMathMode(cublas.CUBLAS_TF32_TENSOR_OP_MATH))
	testenv.Must(t, s.Close())
	testenv.Must(t, ctx.Close())
	if m, err := h.MathMode(); err != nil || m != cublas.CUBLAS_TF32_TENSOR_OP_MATH {
		t.Errorf("MathMode with the Context closed: %v, %v", m, err)
	}
	testenv.Must(t, h.Close())
	testenv.Eventually(t, "the destroy", func() bool { return !testenv.BLASLive(t, uintptr(h.Raw())) })
}

// A call that fails leaves the handle usable: the error names the call
// and cuBLAS's status, and the next call, a change (which waits for every
// hold) and Close all return.
func TestAFailedCallKeepsNoLock(t *testing.T) {
	N := cublas.NoTrans
	for _, c := range []struct {
		fail string
		call func(f *fixture, x cuda.Slice[float32], ws cuda.Slice[byte], o *cuda.Stream) error
	}{
		{"cublasSgemm_v2", func(f *fixture, x cuda.Slice[float32], _ cuda.Slice[byte], o *cuda.Stream) error {
			return cublas.Gemm(f.h, N, N, 2, 2, 2, 1, x, 2, x, 2, 0, x, 2)
		}},
		{"cublasGemmEx", func(f *fixture, x cuda.Slice[float32], _ cuda.Slice[byte], o *cuda.Stream) error {
			return cublas.GemmEx(f.h, N, N, 2, 2, 2, 1, x, 2, x, 2, 0, x, 2, cublas.CUBLAS_COMPUTE_32F)
		}},
		{"cublasGemmBatchedEx", func(f *fixture, x cuda.Slice[float32], _ cuda.Slice[byte], o *cuda.Stream) error {
			b, err := cublas.NewBatch(f.s, []cuda.Slice[float32]{x})
			if err != nil {
				return err
			}
			err = cublas.GemmBatchedEx(f.h, N, N, 2, 2, 2, 1, b, 2, b, 2, 0, b, 2, cublas.CUBLAS_COMPUTE_32F)
			return errors.Join(err, b.Free())
		}},
		{"cublasSgemmStridedBatched", func(f *fixture, x cuda.Slice[float32], _ cuda.Slice[byte], o *cuda.Stream) error {
			return cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, x, 2, 0, x, 2, 0, 0, x, 2, 4, 1)
		}},
		{"cublasSaxpy_v2", func(f *fixture, x cuda.Slice[float32], _ cuda.Slice[byte], o *cuda.Stream) error {
			return cublas.Axpy(f.h, 2, 1, x, 1, x, 1)
		}},
		{"cublasSdot_v2", func(f *fixture, x cuda.Slice[float32], _ cuda.Slice[byte], o *cuda.Stream) error {
			_, err := cublas.Dot(f.h, 2, x, 1, x, 1)
			return err
		}},
		{"cublasSnrm2_v2", func(f *fixture, x cuda.Slice[float32], _ cuda.Slice[byte], o *cuda.Stream) error {
			_, err := cublas.Nrm2(f.h, 2, x, 1)
			return err
		}},
		{"cublasSscal_v2", func(f *fixture, x cuda.Slice[float32], _ cuda.Slice[byte], o *cuda.Stream) error {
			return cublas.Scal(f.h, 2, 1, x, 1)
		}},
		{"cublasSgemv_v2", func(f *fixture, x cuda.Slice[float32], _ cuda.Slice[byte], o *cuda.Stream) error {
			return cublas.Gemv(f.h, N, 2, 2, 1, x, 2, x, 1, 0, x, 1)
		}},
		{"cublasStrsm_v2", func(f *fixture, x cuda.Slice[float32], _ cuda.Slice[byte], o *cuda.Stream) error {
			return cublas.Trsm(f.h, cublas.CUBLAS_SIDE_LEFT, cublas.CUBLAS_FILL_MODE_LOWER, N, cublas.CUBLAS_DIAG_UNIT, 2, 2, 1, x, 2, x, 2)
		}},
		{"cublasSetMathMode", func(f *fixture, _ cuda.Slice[float32], _ cuda.Slice[byte], o *cuda.Stream) error {
			return f.h.SetMathMode(cublas.CUBLAS_PEDANTIC_MATH)
		}},
		{"cublasGetMathMode", func(f *fixture, _ cuda.Slice[float32], _ cuda.Slice[byte], o *cuda.Stream) error {
			_, err := f.h.MathMode()
			return err
		}},
		{"cublasSetWorkspace_v2", func(f *fixture, _ cuda.Slice[float32], ws cuda.Slice[byte], o *cuda.Stream) error {
			return f.h.SetWorkspace(ws)
		}},
		{"cublasSetStream_v2", func(f *fixture, _ cuda.Slice[float32], _ cuda.Slice[byte], o *cuda.Stream) error {
			return f.h.SetStream(o)
		}},
	} {
		t.Run(c.fail, func(t *testing.T) {
			f := newFixture(t)
			x := upload(t, f.s, []float32{1, 2, 3, 4})
			ws, err := cuda.Alloc[byte](f.s, 1<<10)
			testenv.Must(t, err)
			t.Cleanup(func() { testenv.Must(t, ws.Free()) })
			other := newStream(t, f.ctx)
			testenv.BLASFailNext(t, c.fail, 1, statusInternalError)
			err = bounded(t, c.fail+" failing", func() error { return c.call(f, x, ws, other) })
			if !errors.Is(err, cublas.CUBLAS_STATUS_INTERNAL_ERROR) || !strings.Contains(err.Error(), c.fail) {
				t.Errorf("the failed call: %v, want CUBLAS_STATUS_INTERNAL_ERROR naming %s", err, c.fail)
			}
			if err := bounded(t, "a call after the failure", func() error { return cublas.Axpy(f.h, 2, 1, x, 1, x, 1) }); err != nil {
				t.Errorf("a call after the failure: %v", err)
			}
			if err := bounded(t, "a change after the failure", func() error { return f.h.SetMathMode(cublas.CUBLAS_DEFAULT_MATH) }); err != nil {
				t.Errorf("SetMathMode after the failure: %v", err)
			}
			if err := bounded(t, "Close after the failure", f.h.Close); err != nil {
				t.Errorf("Close after the failure: %v", err)
			}
		})
	}
}

// A SetStream that fails keeps the handle on its stream; a SetWorkspace
// that fails keeps the workspace it had (none here), so that a later
// SetStream sets none.
func TestFailedChangesChangeNothing(t *testing.T) {
	f := newFixture(t)
	other := newStream(t, f.ctx)
	testenv.BLASFailNext(t, "cublasSetStream_v2", 1, statusInternalError)
	if err := f.h.SetStream(other); err == nil {
		t.Fatal("SetStream did not fail")
	}
	if f.h.Stream() != f.s {
		t.Error("the handle's stream changed though SetStream failed")
	}
	ws, err := cuda.Alloc[byte](f.s, 1<<10)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, ws.Free()) })
	testenv.BLASFailNext(t, "cublasSetWorkspace_v2", 1, statusInternalError)
	if err := f.h.SetWorkspace(ws); err == nil {
		t.Fatal("SetWorkspace did not fail")
	}
	sets := testenv.BLASStat(t, "set_workspace")
	testenv.Must(t, f.h.SetStream(other))
	if n := testenv.BLASStat(t, "set_workspace") - sets; n != 0 {
		t.Errorf("SetStream set a workspace %d times after the SetWorkspace that failed", n)
	}
	if f.h.Stream() != other {
		t.Error("the handle is not on the stream set")
	}
	// With a workspace set, SetStream sets it again; when that fails,
	// the error says so.
	testenv.Must(t, f.h.SetWorkspace(ws))
	testenv.BLASFailNext(t, "cublasSetWorkspace_v2", 1, statusInternalError)
	if err := f.h.SetStream(f.s); !errors.Is(err, cublas.CUBLAS_STATUS_INTERNAL_ERROR) || !strings.Contains(err.Error(), "after cublasSetStream_v2") {
		t.Errorf("SetStream whose workspace could not be set again: %v", err)
	}
	testenv.Must(t, f.h.SetWorkspace(cuda.Slice[byte]{}))
	// A zero workspace gives cuBLAS's own back: SetStream sets none.
	sets = testenv.BLASStat(t, "set_workspace")
	testenv.Must(t, f.h.SetStream(f.s))
	if n := testenv.BLASStat(t, "set_workspace") - sets; n != 0 {
		t.Errorf("SetStream set a workspace %d times after it was given back", n)
	}
}

// A destroy that fails when a closed handle is destroyed is logged.
func TestAFailedDestroyIsLogged(t *testing.T) {
	f := newFixture(t)
	log := testenv.CaptureErrors(t)
	h, err := cublas.New(f.s)
	testenv.Must(t, err)
	testenv.BLASFailNext(t, "cublasDestroy_v2", 1, statusInternalError)
	testenv.Must(t, h.Close())
	testenv.Eventually(t, "the destroy's log", func() bool { return len(log.Messages()) > 0 })
	if msgs := log.Messages(); len(msgs) != 1 || !strings.Contains(msgs[0], "cublasDestroy_v2") {
		t.Errorf("logged %q, want the failed cublasDestroy_v2", msgs)
	}
}

// Calls whose sizes do not fit a C int go through the _64 entry points,
// and only those.
func TestOnlySizesBeyondACIntTakeThe64BitEntryPoints(t *testing.T) {
	f := newFixture(t)
	const big = 1 << 31
	a := upload(t, f.s, []float32{1, 2})
	c := upload(t, f.s, []float32{0, 0})
	N := cublas.NoTrans
	for _, ld := range []int{big - 1, big} {
		before := testenv.BLASStat(t, "calls_64")
		testenv.Must(t, cublas.Gemm(f.h, N, N, 2, 1, 1, 1, a, ld, a, 1, 0, c, 2))
		testenv.Must(t, cublas.Axpy(f.h, 1, 1, a, ld, c, 1))
		testenv.Must(t, cublas.Scal(f.h, 1, 1, c, ld))
		_, err := cublas.Nrm2(f.h, 1, a, ld)
		testenv.Must(t, err)
		_, err = cublas.Dot(f.h, 1, a, ld, a, 1)
		testenv.Must(t, err)
		testenv.Must(t, cublas.Gemv(f.h, N, 2, 1, 1, a, 2, a, ld, 0, c, 1))
		testenv.Must(t, cublas.GemmEx(f.h, N, N, 2, 1, 1, 1, a, ld, a, 1, 0, c, 2, cublas.CUBLAS_COMPUTE_32F))
		testenv.Must(t, cublas.GemmStridedBatched(f.h, N, N, 2, 1, 1, 1, a, ld, 0, a, 1, 0, 0, c, 2, 2, 1))
		testenv.Must(t, gemmBatchedLD(t, f, a, c, ld))
		testenv.Must(t, cublas.Trsm(f.h, cublas.CUBLAS_SIDE_RIGHT, cublas.CUBLAS_FILL_MODE_LOWER, N, cublas.CUBLAS_DIAG_UNIT, 2, 1, 1, a, ld, c, 2))
		want := int64(0)
		if ld == big {
			want = 10
		}
		if n := testenv.BLASStat(t, "calls_64") - before; n != want {
			t.Errorf("ld %d: %d calls through a _64 entry point, want %d", ld, n, want)
		}
	}
}

// gemmBatchedLD is GemmBatchedEx of one 2x1 product with ldA ld.
func gemmBatchedLD(t *testing.T, f *fixture, a, c cuda.Slice[float32], ld int) error {
	ab, err := cublas.NewBatch(f.s, []cuda.Slice[float32]{a})
	testenv.Must(t, err)
	cb, err := cublas.NewBatch(f.s, []cuda.Slice[float32]{c})
	testenv.Must(t, err)
	err = cublas.GemmBatchedEx(f.h, cublas.NoTrans, cublas.NoTrans, 2, 1, 1, 1, ab, ld, ab, 1, 0, cb, 2, cublas.CUBLAS_COMPUTE_32F)
	return errors.Join(err, ab.Free(), cb.Free())
}

// settle waits for the handles' destroys that earlier tests' Closes
// handed to graph.Postpone, so that the stand-in's counts move only for
// this test.
func settle(t *testing.T) {
	t.Helper()
	testenv.Must(t, graph.Drain(testenv.Context(t)))
}
