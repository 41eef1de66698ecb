//go:build !gpu

package cublas_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/internal/testenv"
)

// After Close every call is ErrClosed and submits nothing.
func TestCallsAfterCloseAreErrClosed(t *testing.T) {
	f := newFixture(t)
	a := upload(t, f.s, make([]float32, 16))
	one := upload(t, f.s, []float32{1})
	testenv.Must(t, f.s.Sync(testenv.Context(t)))
	testenv.Must(t, f.h.Close())
	calls := testenv.BLASStat(t, "calls")
	N := cublas.NoTrans
	for name, call := range map[string]func() error{
		"Gemm":         func() error { return cublas.Gemm(f.h, N, N, 2, 2, 2, 1, a, 2, a, 2, 0, a, 2) },
		"GemmRowMajor": func() error { return cublas.GemmRowMajor(f.h, N, N, 2, 2, 2, 1, a, 2, a, 2, 0, a, 2) },
		"GemmEx": func() error {
			return cublas.GemmEx(f.h, N, N, 2, 2, 2, 1, a, 2, a, 2, 0, a, 2, cublas.CUBLAS_COMPUTE_32F)
		},
		"GemmStridedBatchedEx": func() error {
			return cublas.GemmStridedBatchedEx(f.h, N, N, 2, 2, 2, 1, a, 2, 4, a, 2, 4, 0, a, 2, 4, 2, cublas.CUBLAS_COMPUTE_32F)
		},
		"GemmStridedBatchedExRowMajor": func() error {
			return cublas.GemmStridedBatchedExRowMajor(f.h, N, N, 2, 2, 2, 1, a, 2, 4, a, 2, 4, 0, a, 2, 4, 2, cublas.CUBLAS_COMPUTE_32F)
		},
		"GemmExDevice": func() error {
			return cublas.GemmExDevice(f.h, N, N, 2, 2, 2, one, a, 2, a, 2, one, a, 2, cublas.CUBLAS_COMPUTE_32F)
		},
		"Axpy":        func() error { return cublas.Axpy(f.h, 2, 1, a, 1, a, 1) },
		"Dot":         func() error { _, err := cublas.Dot(f.h, 2, a, 1, a, 1); return err },
		"SetMathMode": func() error { return f.h.SetMathMode(cublas.CUBLAS_DEFAULT_MATH) },
		"MathMode":    func() error { _, err := f.h.MathMode(); return err },
		"SetStream":   func() error { return f.h.SetStream(f.s) },
		"Close":       func() error { return f.h.Close() },
	} {
		if err := call(); !errors.Is(err, cublas.ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	if got := testenv.BLASStat(t, "calls"); got != calls {
		t.Errorf("%d calls reached cuBLAS after Close", got-calls)
	}
}
