package cublas_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// Every shape error is ErrShape, names the argument, and is found before
// anything reaches cuBLAS.
func TestShapeErrorsNameTheArgument(t *testing.T) {
	f := newFixture(t)
	s12 := upload(t, f.s, make([]float32, 12)) // room for 3x4, 4x3, 2x6, ...
	s6 := upload(t, f.s, make([]float32, 6))
	N, T := cublas.NoTrans, cublas.Trans
	L, R := cublas.CUBLAS_SIDE_LEFT, cublas.CUBLAS_SIDE_RIGHT
	lo, nu := cublas.CUBLAS_FILL_MODE_LOWER, cublas.CUBLAS_DIAG_NON_UNIT
	for _, c := range []struct {
		name, want string
		call       func() error
	}{
		{"transA", "transA", func() error { return cublas.Gemm(f.h, 7, N, 2, 2, 2, 1, s12, 2, s12, 2, 0, s12, 2) }},
		{"transB", "transB", func() error { return cublas.Gemm(f.h, N, 9, 2, 2, 2, 1, s12, 2, s12, 2, 0, s12, 2) }},
		{"negative m", "m is -1", func() error { return cublas.Gemm(f.h, N, N, -1, 2, 2, 1, s12, 2, s12, 2, 0, s12, 2) }},
		{"negative n", "n is -2", func() error { return cublas.Gemm(f.h, N, N, 2, -2, 2, 1, s12, 2, s12, 2, 0, s12, 2) }},
		{"negative k", "k is -3", func() error { return cublas.Gemm(f.h, N, N, 2, 2, -3, 1, s12, 2, s12, 2, 0, s12, 2) }},
		{"lda below m", "ldA is 2", func() error { return cublas.Gemm(f.h, N, N, 3, 2, 2, 1, s12, 2, s12, 2, 0, s12, 3) }},
		{"lda below k transposed", "ldA is 1", func() error { return cublas.Gemm(f.h, T, N, 1, 2, 2, 1, s12, 1, s12, 2, 0, s12, 1) }},
		{"ldb", "ldB is 1", func() error { return cublas.Gemm(f.h, N, N, 2, 2, 2, 1, s12, 2, s12, 1, 0, s12, 2) }},
		{"ldc", "ldC is 1", func() error { return cublas.Gemm(f.h, N, N, 2, 2, 2, 1, s12, 2, s12, 2, 0, s12, 1) }},
		{"A too short", "A: a 3x4 matrix", func() error { return cublas.Gemm(f.h, N, N, 3, 1, 4, 1, s6, 3, s12, 4, 0, s12, 3) }},
		{"B too short", "B: a 4x2 matrix", func() error { return cublas.Gemm(f.h, N, N, 1, 2, 4, 1, s12, 1, s6, 4, 0, s12, 1) }},
		{"C too short", "C: a 3x3 matrix", func() error { return cublas.Gemm(f.h, N, N, 3, 3, 1, 1, s12, 3, s12, 1, 0, s6, 3) }},
		{"C too short by its ld", "C: a 2x2 matrix with ldC 5", func() error { return cublas.Gemm(f.h, N, N, 2, 2, 1, 1, s12, 2, s12, 1, 0, s6, 5) }},
		{"row-major A", "A: a 4x3 matrix", func() error {
			return cublas.GemmRowMajor(f.h, N, N, 3, 1, 4, 1, s6, 4, s12, 1, 0, s12, 1)
		}},
		{"row-major ldc", "ldC is 1", func() error { return cublas.GemmRowMajor(f.h, N, N, 2, 2, 2, 1, s12, 2, s12, 2, 0, s12, 1) }},
		{"GemmEx ldb", "ldB is 0", func() error {
			return cublas.GemmEx(f.h, N, N, 2, 2, 1, 1, s12, 2, s12, 0, 0, s12, 2, cublas.CUBLAS_COMPUTE_32F)
		}},
		{"GemmEx compute", "compute type", func() error {
			return cublas.GemmEx(f.h, N, N, 2, 2, 1, 1, s12, 2, s12, 1, 0, s12, 2, 12345)
		}},
		{"batch", "batch is -1", func() error {
			return cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, s12, 2, 4, s12, 2, 4, 0, s12, 2, 4, -1)
		}},
		{"strideA", "strideA is -4", func() error {
			return cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, s12, 2, -4, s12, 2, 4, 0, s12, 2, 4, 2)
		}},
		{"batched A too short", "A: 4 matrices", func() error {
			return cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, s12, 2, 4, s12, 2, 0, 0, s12, 2, 0, 4)
		}},
		{"strideC overlaps", "strideC is 2", func() error {
			return cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, s12, 2, 0, s12, 2, 0, 0, s12, 2, 2, 2)
		}},
		{"axpy n", "n is -1", func() error { return cublas.Axpy(f.h, -1, 1, s6, 1, s6, 1) }},
		{"axpy incx 0", "incx is 0", func() error { return cublas.Axpy(f.h, 2, 1, s6, 0, s6, 1) }},
		{"axpy x short", "x: 4 elements with incx 2 need 7", func() error { return cublas.Axpy(f.h, 4, 1, s6, 2, s12, 1) }},
		{"axpy y short", "y: 7 elements", func() error { return cublas.Axpy(f.h, 7, 1, s12, 1, s6, -1) }},
		{"dot y", "incy is 0", func() error { _, err := cublas.Dot(f.h, 2, s6, 1, s6, 0); return err }},
		{"nrm2 incx", "incx is -1", func() error { _, err := cublas.Nrm2(f.h, 2, s6, -1); return err }},
		{"nrm2 x", "x: 7 elements", func() error { _, err := cublas.Nrm2(f.h, 7, s6, 1); return err }},
		{"scal incx", "incx is 0", func() error { return cublas.Scal(f.h, 2, 2, s6, 0) }},
		{"gemv A", "A: a 3x3 matrix", func() error { return cublas.Gemv(f.h, N, 3, 3, 1, s6, 3, s12, 1, 0, s12, 1) }},
		{"gemv x", "x: 4 elements", func() error { return cublas.Gemv(f.h, N, 1, 4, 1, s12, 1, s6, 2, 0, s12, 1) }},
		{"gemv y transposed", "y: 4 elements", func() error { return cublas.Gemv(f.h, T, 1, 4, 1, s12, 1, s12, 1, 0, s6, 2) }},
		{"trsm side", "side is", func() error { return cublas.Trsm(f.h, 5, lo, N, nu, 2, 2, 1, s12, 2, s12, 2) }},
		{"trsm uplo", "uplo is", func() error { return cublas.Trsm(f.h, L, 5, N, nu, 2, 2, 1, s12, 2, s12, 2) }},
		{"trsm diag", "diag is", func() error { return cublas.Trsm(f.h, L, lo, N, 5, 2, 2, 1, s12, 2, s12, 2) }},
		{"trsm A right", "A: a 3x3 matrix", func() error { return cublas.Trsm(f.h, R, lo, N, nu, 2, 3, 1, s6, 3, s12, 2) }},
		{"trsm B", "ldB is 1", func() error { return cublas.Trsm(f.h, L, lo, N, nu, 2, 2, 1, s12, 2, s12, 1) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			if !errors.Is(err, cublas.ErrShape) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want ErrShape naming %q", err, c.want)
			}
		})
	}
}

// A zero or freed Slice is refused by name, and nothing is submitted.
func TestFreedAndZeroSlicesAreRefused(t *testing.T) {
	f := newFixture(t)
	a := upload(t, f.s, make([]float32, 4))
	freed, err := cuda.Alloc[float32](f.s, 4)
	testenv.Must(t, err)
	testenv.MustBounded(t, "freed.Free", freed.Free)
	if err := testenv.BoundedErr(t, "cublas.Gemm", func() error {
		return cublas.Gemm(f.h, cublas.NoTrans, cublas.NoTrans, 2, 2, 2, 1, a, 2, a, 2, 0, freed, 2)
	}); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("C freed: %v", err)
	}
	if err := cublas.Axpy(f.h, 0, 1, cuda.Slice[float32]{}, 1, a, 1); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("x zero: %v", err)
	}
}
