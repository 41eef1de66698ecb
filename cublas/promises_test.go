package cublas_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
)

// These tests hold package cublas to what its documentation promises, one
// promise a test, each failing when the promise breaks.

// bounded runs call on its own goroutine and fails the test (with the
// goroutines' stacks, through testenv.Recv's timeout) if it does not
// return within testenv.Timeout: a call that blocks on a lock kept by an
// earlier failure fails the test instead of hanging it.
func bounded(t *testing.T, what string, call func() error) error {
	t.Helper()
	return testenv.Recv(t, testenv.WaitAsync(call), what)
}

// cuBLAS wants ld >= max(1, rows) even when a size is 0: a zero dimension
// with a leading dimension of 0 is refused before anything reaches cuBLAS,
// for every call that takes a matrix; a zero dimension with ld 1 is taken
// and does nothing.
func TestZeroDimensionStillNeedsALeadingDimensionOfOne(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, []float32{1, 2, 3, 4})
	N := cublas.NoTrans
	L, lo, nu := cublas.CUBLAS_SIDE_LEFT, cublas.CUBLAS_FILL_MODE_LOWER, cublas.CUBLAS_DIAG_NON_UNIT
	for _, c := range []struct {
		name, want string
		call       func() error
	}{
		{"Gemm m=0 lda=0", "ldA is 0", func() error { return cublas.Gemm(f.h, N, N, 0, 2, 2, 1, x, 0, x, 2, 0, x, 1) }},
		{"Gemm k=0 ldb=0", "ldB is 0", func() error { return cublas.Gemm(f.h, N, N, 2, 2, 0, 1, x, 2, x, 0, 0, x, 2) }},
		{"Gemm m=0 ldc=0", "ldC is 0", func() error { return cublas.Gemm(f.h, N, N, 0, 2, 2, 1, x, 1, x, 2, 0, x, 0) }},
		{"GemmRowMajor n=0 ldc=0", "ldC is 0", func() error { return cublas.GemmRowMajor(f.h, N, N, 2, 0, 2, 1, x, 2, x, 1, 0, x, 0) }},
		{"GemmEx m=0 lda=0", "ldA is 0", func() error {
			return cublas.GemmEx(f.h, N, N, 0, 2, 2, 1, x, 0, x, 2, 0, x, 1, cublas.CUBLAS_COMPUTE_32F)
		}},
		{"GemmStridedBatched m=0 ldc=0", "ldC is 0", func() error {
			return cublas.GemmStridedBatched(f.h, N, N, 0, 2, 2, 1, x, 1, 0, x, 2, 0, 0, x, 0, 0, 1)
		}},
		{"Gemv m=0 lda=0", "ldA is 0", func() error { return cublas.Gemv(f.h, N, 0, 2, 1, x, 0, x, 1, 0, x, 1) }},
		{"Trsm m=0 ldb=0", "ldB is 0", func() error { return cublas.Trsm(f.h, L, lo, N, nu, 0, 2, 1, x, 1, x, 0) }},
		{"CheckMatrix 0x0 ld=0", "ldA is 0", func() error { return cublas.CheckMatrix("Check", "A", 0, 0, 0, 0) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := testenvCalls(t)
			err := c.call()
			if !errors.Is(err, cublas.ErrShape) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want ErrShape naming %q", err, c.want)
			}
			if n := testenvCalls(t) - calls; n != 0 {
				t.Errorf("%d calls reached cuBLAS", n)
			}
		})
	}
	// A zero dimension with ld 1: nothing to check against the Slices
	// beyond it, no error. C is 0 x 3 with ldC 1: it covers no element
	// (a 1 x 3 one would need 3).
	b6 := upload(t, f.s, make([]float32, 6))
	testenv.Must(t, cublas.Gemm(f.h, N, N, 0, 3, 2, 1, x, 1, b6, 2, 0, head(t, x, 1), 1))
	testenv.Must(t, cublas.Gemm(f.h, N, N, 2, 2, 0, 1, x, 2, head(t, x, 1), 1, 1, x, 2))
	testenv.Must(t, cublas.CheckMatrix("Check", "A", 0, 5, 1, 0))
	testenv.Must(t, cublas.CheckMatrix("Check", "A", 5, 0, 5, 0))
	if got := download(t, f.s, x); !slices.Equal(got, []float32{1, 2, 3, 4}) {
		t.Errorf("a product with k = 0 and beta 1 changed C: %v", got)
	}
	if err := cublas.CheckMatrix("Check", "A", -1, 2, 1, 8); !errors.Is(err, cublas.ErrShape) {
		t.Errorf("CheckMatrix of -1 rows: %v", err)
	}
	if err := cublas.CheckMatrix("Check", "A", 2, -1, 2, 8); !errors.Is(err, cublas.ErrShape) {
		t.Errorf("CheckMatrix of -1 columns: %v", err)
	}
}

// head is the first n elements of x.
func head[T any](t *testing.T, x cuda.Slice[T], n int) cuda.Slice[T] {
	t.Helper()
	p, err := x.Slice(0, n)
	testenv.Must(t, err)
	return p
}

// Every size check is exact: the Slice that just fits is taken, one
// element less is ErrShape; a leading dimension equal to the rows is
// taken, one less is not.
func TestSizeChecksAreExact(t *testing.T) {
	f := newFixture(t)
	buf := upload(t, f.s, make([]float32, 64))
	part := func(n int) cuda.Slice[float32] {
		x, err := buf.Slice(0, n)
		testenv.Must(t, err)
		return x
	}
	N, T := cublas.NoTrans, cublas.Trans
	L, R := cublas.CUBLAS_SIDE_LEFT, cublas.CUBLAS_SIDE_RIGHT
	lo, nu := cublas.CUBLAS_FILL_MODE_LOWER, cublas.CUBLAS_DIAG_NON_UNIT
	big := part(64)
	for _, c := range []struct {
		name string
		fits int // the length that just fits
		call func(x cuda.Slice[float32]) error
	}{
		// A 3x2 with ldA 4: (2-1)*4 + 3 = 7.
		{"Gemm A", 7, func(x cuda.Slice[float32]) error { return cublas.Gemm(f.h, N, N, 3, 2, 2, 1, x, 4, big, 2, 0, big, 3) }},
		// op(A) = A^T is 3x2: A stored 2x3, ldA 2: (3-1)*2 + 2 = 6.
		{"Gemm A transposed", 6, func(x cuda.Slice[float32]) error { return cublas.Gemm(f.h, T, N, 3, 2, 2, 1, x, 2, big, 2, 0, big, 3) }},
		{"Gemm B", 7, func(x cuda.Slice[float32]) error { return cublas.Gemm(f.h, N, N, 2, 2, 3, 1, big, 2, x, 4, 0, big, 2) }},
		{"Gemm C", 8, func(x cuda.Slice[float32]) error { return cublas.Gemm(f.h, N, N, 3, 2, 2, 1, big, 3, big, 2, 0, x, 5) }},
		{"GemmRowMajor C", 7, func(x cuda.Slice[float32]) error {
			return cublas.GemmRowMajor(f.h, N, N, 2, 3, 2, 1, big, 2, big, 3, 0, x, 4)
		}},
		{"GemmRowMajor A", 5, func(x cuda.Slice[float32]) error {
			return cublas.GemmRowMajor(f.h, N, N, 2, 2, 2, 1, x, 3, big, 2, 0, big, 2)
		}},
		{"GemmRowMajor B", 5, func(x cuda.Slice[float32]) error {
			return cublas.GemmRowMajor(f.h, N, N, 2, 2, 2, 1, big, 2, x, 3, 0, big, 2)
		}},
		{"GemmEx C", 8, func(x cuda.Slice[float32]) error {
			return cublas.GemmEx(f.h, N, N, 3, 2, 2, 1, big, 3, big, 2, 0, x, 5, cublas.CUBLAS_COMPUTE_32F)
		}},
		// 3 matrices of 2x2 (4 elements), 5 apart: 2*5 + 4 = 14.
		{"GemmStridedBatched A", 14, func(x cuda.Slice[float32]) error {
			return cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, x, 2, 5, big, 2, 4, 0, big, 2, 4, 3)
		}},
		{"GemmStridedBatched B", 14, func(x cuda.Slice[float32]) error {
			return cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, big, 2, 4, x, 2, 5, 0, big, 2, 4, 3)
		}},
		{"GemmStridedBatched C", 14, func(x cuda.Slice[float32]) error {
			return cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, big, 2, 4, big, 2, 4, 0, x, 2, 5, 3)
		}},
		// x of Gemv (no transpose) has n = 3 elements, incx 2: 1 + 2*2 = 5.
		{"Gemv x", 5, func(x cuda.Slice[float32]) error { return cublas.Gemv(f.h, N, 2, 3, 1, big, 2, x, 2, 0, big, 1) }},
		{"Gemv y", 3, func(x cuda.Slice[float32]) error { return cublas.Gemv(f.h, N, 3, 2, 1, big, 3, big, 1, 0, x, 1) }},
		{"Gemv y transposed", 2, func(x cuda.Slice[float32]) error { return cublas.Gemv(f.h, T, 3, 2, 1, big, 3, big, 1, 0, x, 1) }},
		{"Gemv A", 8, func(x cuda.Slice[float32]) error { return cublas.Gemv(f.h, N, 3, 2, 1, x, 5, big, 1, 0, big, 1) }},
		{"Trsm A left", 9, func(x cuda.Slice[float32]) error { return cublas.Trsm(f.h, L, lo, N, nu, 3, 2, 1, x, 3, big, 3) }},
		{"Trsm A right", 4, func(x cuda.Slice[float32]) error { return cublas.Trsm(f.h, R, lo, N, nu, 3, 2, 1, x, 2, big, 3) }},
		{"Trsm B", 7, func(x cuda.Slice[float32]) error { return cublas.Trsm(f.h, L, lo, N, nu, 3, 2, 1, big, 3, x, 4) }},
		// Vectors: n = 4 with inc 3 needs 1 + 3*3 = 10; inc -3 the same.
		{"Axpy x", 10, func(x cuda.Slice[float32]) error { return cublas.Axpy(f.h, 4, 1, x, 3, big, 1) }},
		{"Axpy y negative inc", 10, func(x cuda.Slice[float32]) error { return cublas.Axpy(f.h, 4, 1, big, 1, x, -3) }},
		{"Dot x", 10, func(x cuda.Slice[float32]) error { _, err := cublas.Dot(f.h, 4, x, 3, big, 1); return err }},
		{"Dot y", 4, func(x cuda.Slice[float32]) error { _, err := cublas.Dot(f.h, 4, big, 1, x, 1); return err }},
		{"Nrm2", 10, func(x cuda.Slice[float32]) error { _, err := cublas.Nrm2(f.h, 4, x, 3); return err }},
		{"Scal", 10, func(x cuda.Slice[float32]) error { return cublas.Scal(f.h, 4, 1, x, 3) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(part(c.fits)); err != nil {
				t.Errorf("a Slice of %d elements, which just fits: %v", c.fits, err)
			}
			if err := c.call(part(c.fits - 1)); !errors.Is(err, cublas.ErrShape) {
				t.Errorf("a Slice of %d elements, one short: %v, want ErrShape", c.fits-1, err)
			}
		})
	}
	// Leading dimensions: equal to the rows is taken, one less is not.
	for _, c := range []struct {
		name string
		call func(ld int) error
		rows int
	}{
		{"Gemm ldA", func(ld int) error { return cublas.Gemm(f.h, N, N, 3, 2, 2, 1, big, ld, big, 2, 0, big, 3) }, 3},
		{"Gemm ldA transposed", func(ld int) error { return cublas.Gemm(f.h, T, N, 3, 2, 2, 1, big, ld, big, 2, 0, big, 3) }, 2},
		{"Gemm ldB", func(ld int) error { return cublas.Gemm(f.h, N, N, 3, 2, 4, 1, big, 3, big, ld, 0, big, 3) }, 4},
		{"Gemm ldB transposed", func(ld int) error { return cublas.Gemm(f.h, N, T, 3, 5, 4, 1, big, 3, big, ld, 0, big, 3) }, 5},
		{"Gemm ldC", func(ld int) error { return cublas.Gemm(f.h, N, N, 3, 2, 2, 1, big, 3, big, 2, 0, big, ld) }, 3},
		{"Gemv ldA", func(ld int) error { return cublas.Gemv(f.h, N, 3, 2, 1, big, ld, big, 1, 0, big, 1) }, 3},
		{"Trsm ldA right", func(ld int) error { return cublas.Trsm(f.h, R, lo, N, nu, 2, 3, 1, big, ld, big, 2) }, 3},
		{"Trsm ldB", func(ld int) error { return cublas.Trsm(f.h, L, lo, N, nu, 3, 2, 1, big, 3, big, ld) }, 3},
		{"GemmStridedBatched ldA", func(ld int) error {
			return cublas.GemmStridedBatched(f.h, N, N, 3, 2, 2, 1, big, ld, 6, big, 2, 4, 0, big, 3, 6, 2)
		}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(c.rows); err != nil {
				t.Errorf("ld = rows (%d): %v", c.rows, err)
			}
			if err := c.call(c.rows - 1); !errors.Is(err, cublas.ErrShape) {
				t.Errorf("ld = rows-1 (%d): %v, want ErrShape", c.rows-1, err)
			}
		})
	}
	// Output matrices of a batch may touch but not overlap: strideC equal
	// to one matrix is taken, one less is not; a batch of one may have any
	// strideC.
	if err := cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, big, 2, 0, big, 2, 0, 0, big, 2, 4, 3); err != nil {
		t.Errorf("strideC of one matrix: %v", err)
	}
	if err := cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, big, 2, 0, big, 2, 0, 0, big, 2, 3, 3); !errors.Is(err, cublas.ErrShape) {
		t.Errorf("strideC one short of a matrix: %v", err)
	}
	if err := cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, big, 2, 0, big, 2, 0, 0, big, 2, 0, 1); err != nil {
		t.Errorf("a batch of one with strideC 0: %v", err)
	}
	if err := cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, big, 2, 0, big, 2, 0, 0, big, 2, 4, 0); err != nil {
		t.Errorf("a batch of none: %v", err)
	}
	// Nrm2 and Scal want a positive increment: 1 is taken.
	if _, err := cublas.Nrm2(f.h, 2, big, 1); err != nil {
		t.Errorf("Nrm2 with incx 1: %v", err)
	}
	if err := cublas.Scal(f.h, 2, 1, big, 1); err != nil {
		t.Errorf("Scal with incx 1: %v", err)
	}
	if err := cublas.Scal(f.h, 2, 1, big, -1); !errors.Is(err, cublas.ErrShape) {
		t.Errorf("Scal with incx -1: %v", err)
	}
	// n = 0 needs no element but still a non-zero increment.
	if err := cublas.Axpy(f.h, 0, 1, big, 0, big, 1); !errors.Is(err, cublas.ErrShape) {
		t.Errorf("Axpy of 0 elements with incx 0: %v", err)
	}
	if err := cublas.Axpy(f.h, 0, 1, part(1), 1, part(1), 5); err != nil {
		t.Errorf("Axpy of 0 elements: %v", err)
	}
}

// Sizes so large that the last element's index overflows an int are
// ErrShape, not a wrapped-around length that happens to fit.
func TestOverflowingSizesAreShapeErrors(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, make([]float32, 8))
	N := cublas.NoTrans
	huge := math.MaxInt / 2
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"Gemm ldC", func() error { return cublas.Gemm(f.h, N, N, 2, 3, 1, 1, x, 2, x, 1, 0, x, huge) }},
		{"Axpy incx", func() error { return cublas.Axpy(f.h, 3, 1, x, huge, x, 1) }},
		{"Axpy incx negative", func() error { return cublas.Axpy(f.h, 3, 1, x, -huge, x, 1) }},
		{"GemmStridedBatched strideA", func() error {
			return cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, x, 2, huge, x, 2, 0, 0, x, 2, 4, 3)
		}},
		{"GemmStridedBatched strideC", func() error {
			return cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, x, 2, 0, x, 2, 0, 0, x, 2, huge, 3)
		}},
		{"CheckMatrix", func() error { return cublas.CheckMatrix("Check", "A", 2, 3, huge, 8) }},
	} {
		if err := c.call(); !errors.Is(err, cublas.ErrShape) {
			t.Errorf("%s: %v, want ErrShape", c.name, err)
		}
	}
}

// The 64-bit-index entry points are used when a size does not fit a C
// int, and give the same results: a leading dimension or an increment
// beyond 2^31-1 with one column or one element needs no more memory.
func TestSizesBeyondACIntTakeThe64BitEntryPoints(t *testing.T) {
	f := newFixture(t)
	const big = math.MaxInt32 + 1
	N := cublas.NoTrans
	a := upload(t, f.s, []float32{1, 2})
	b := upload(t, f.s, []float32{3})
	t.Run("Gemm", func(t *testing.T) {
		c := upload(t, f.s, []float32{1, 1})
		testenv.Must(t, cublas.Gemm(f.h, N, N, 2, 1, 1, 2, a, big, b, 1, 1, c, 2))
		if got := download(t, f.s, c); !slices.Equal(got, []float32{7, 13}) {
			t.Errorf("C = %v, want [7 13]", got)
		}
	})
	t.Run("Dgemm", func(t *testing.T) {
		ad, bd, cd := upload(t, f.s, []float64{1, 2}), upload(t, f.s, []float64{3}), upload(t, f.s, []float64{0, 0})
		testenv.Must(t, cublas.Gemm(f.h, N, N, 2, 1, 1, 1, ad, 2, bd, big, 0, cd, 2))
		if got := download(t, f.s, cd); !slices.Equal(got, []float64{3, 6}) {
			t.Errorf("C = %v, want [3 6]", got)
		}
	})
	t.Run("GemmEx", func(t *testing.T) {
		c := upload(t, f.s, []float32{0, 0})
		testenv.Must(t, cublas.GemmEx(f.h, N, N, 2, 1, 1, 1, a, 2, b, 1, 0, c, big, cublas.CUBLAS_COMPUTE_32F))
		if got := download(t, f.s, c); !slices.Equal(got, []float32{3, 6}) {
			t.Errorf("C = %v, want [3 6]", got)
		}
	})
	t.Run("GemmStridedBatched", func(t *testing.T) {
		c := upload(t, f.s, []float32{0, 0})
		testenv.Must(t, cublas.GemmStridedBatched(f.h, N, N, 2, 1, 1, 1, a, big, 0, b, 1, 0, 0, c, 2, 2, 1))
		if got := download(t, f.s, c); !slices.Equal(got, []float32{3, 6}) {
			t.Errorf("C = %v, want [3 6]", got)
		}
	})
	t.Run("Axpy", func(t *testing.T) {
		y := upload(t, f.s, []float32{10})
		testenv.Must(t, cublas.Axpy(f.h, 1, 2, a, big, y, big))
		if got := download(t, f.s, y); got[0] != 12 {
			t.Errorf("y = %v, want [12]", got)
		}
	})
	t.Run("Dot", func(t *testing.T) {
		d, err := cublas.Dot(f.h, 1, a, big, b, -big)
		if err != nil || d != 3 {
			t.Errorf("Dot = %v, %v; want 3", d, err)
		}
	})
	t.Run("Nrm2", func(t *testing.T) {
		n, err := cublas.Nrm2(f.h, 1, b, big)
		if err != nil || math.Abs(float64(n)-3) > 1e-6 {
			t.Errorf("Nrm2 = %v, %v; want 3", n, err)
		}
	})
	t.Run("Scal", func(t *testing.T) {
		x := upload(t, f.s, []float64{4})
		testenv.Must(t, cublas.Scal(f.h, 1, 0.5, x, big))
		if got := download(t, f.s, x); got[0] != 2 {
			t.Errorf("x = %v, want [2]", got)
		}
	})
	t.Run("Gemv", func(t *testing.T) {
		y := upload(t, f.s, []float32{1, 1})
		testenv.Must(t, cublas.Gemv(f.h, N, 2, 1, 1, a, 2, b, big, 1, y, 1))
		if got := download(t, f.s, y); !slices.Equal(got, []float32{4, 7}) {
			t.Errorf("y = %v, want [4 7]", got)
		}
	})
	t.Run("Trsm", func(t *testing.T) {
		two := upload(t, f.s, []float32{2})
		x := upload(t, f.s, []float32{6, 8})
		// X * 2 = B, B 2x1: X = B/2.
		testenv.Must(t, cublas.Trsm(f.h, cublas.CUBLAS_SIDE_RIGHT, cublas.CUBLAS_FILL_MODE_UPPER, N, cublas.CUBLAS_DIAG_NON_UNIT,
			2, 1, 1, two, big, x, 2))
		if got := download(t, f.s, x); !slices.Equal(got, []float32{3, 4}) {
			t.Errorf("X = %v, want [3 4]", got)
		}
	})
}

// Gemv, Trsm, Scal and Nrm2 compute what their documentation says (on the
// stand-in and on the GPU alike), in both precisions.
func TestLevel1And2AndTrsmMatchTheCPU(t *testing.T) {
	f := newFixture(t)
	// A = [[1 2 3] [4 5 6]] (2x3), column-major with ldA 3 (a padding row).
	a := upload(t, f.s, []float64{1, 4, 99, 2, 5, 99, 3, 6, 99})
	t.Run("Gemv", func(t *testing.T) {
		x := upload(t, f.s, []float64{1, 0, 1, 0, 1}) // (1, 1, 1) with incx 2
		y := upload(t, f.s, []float64{1, 1})
		testenv.Must(t, cublas.Gemv(f.h, cublas.NoTrans, 2, 3, 2, a, 3, x, 2, -1, y, 1))
		if got := download(t, f.s, y); !slices.Equal(got, []float64{11, 29}) {
			t.Errorf("y = %v, want [11 29]", got)
		}
		yt := upload(t, f.s, []float64{0, 0, 0})
		xt := upload(t, f.s, []float64{1, 10})
		testenv.Must(t, cublas.Gemv(f.h, cublas.Trans, 2, 3, 1, a, 3, xt, 1, 0, yt, -1))
		// A^T x = (41, 52, 63), written backwards by incy -1.
		if got := download(t, f.s, yt); !slices.Equal(got, []float64{63, 52, 41}) {
			t.Errorf("y = %v, want [63 52 41]", got)
		}
	})
	t.Run("Scal", func(t *testing.T) {
		x := upload(t, f.s, []float32{1, 2, 3, 4, 5})
		testenv.Must(t, cublas.Scal(f.h, 3, 2, x, 2))
		if got := download(t, f.s, x); !slices.Equal(got, []float32{2, 2, 6, 4, 10}) {
			t.Errorf("x = %v, want [2 2 6 4 10]", got)
		}
	})
	t.Run("Nrm2", func(t *testing.T) {
		x := upload(t, f.s, []float64{3, 100, 4})
		n, err := cublas.Nrm2(f.h, 2, x, 2)
		if err != nil || math.Abs(n-5) > 1e-12 {
			t.Errorf("Nrm2 = %v, %v; want 5", n, err)
		}
		xs := upload(t, f.s, []float32{3, 4})
		if n, err := cublas.Nrm2(f.h, 2, xs, 1); err != nil || math.Abs(float64(n)-5) > 1e-6 {
			t.Errorf("Nrm2 = %v, %v; want 5", n, err)
		}
	})
	t.Run("Trsm", func(t *testing.T) {
		// L = [[2 0] [1 4]] lower; L X = alpha B with B = [[4] [10]]
		// and alpha 2: X = (4, 4).
		l := upload(t, f.s, []float64{2, 1, 77, 4}) // column-major, the upper element ignored
		b := upload(t, f.s, []float64{4, 10})
		testenv.Must(t, cublas.Trsm(f.h, cublas.CUBLAS_SIDE_LEFT, cublas.CUBLAS_FILL_MODE_LOWER, cublas.NoTrans,
			cublas.CUBLAS_DIAG_NON_UNIT, 2, 1, 2, l, 2, b, 2))
		if got := download(t, f.s, b); !slices.Equal(got, []float64{4, 4}) {
			t.Errorf("X = %v, want [4 4]", got)
		}
		// X L = B on the right, B 1x2 = (8, 8): (2x1 + x2, 4x2) = (8, 8),
		// X = (3, 2).
		br := upload(t, f.s, []float32{8, 8})
		ls := upload(t, f.s, []float32{2, 1, 77, 4})
		testenv.Must(t, cublas.Trsm(f.h, cublas.CUBLAS_SIDE_RIGHT, cublas.CUBLAS_FILL_MODE_LOWER, cublas.NoTrans,
			cublas.CUBLAS_DIAG_NON_UNIT, 1, 2, 1, ls, 2, br, 1))
		if got := download(t, f.s, br); !slices.Equal(got, []float32{3, 2}) {
			t.Errorf("X = %v, want [3 2]", got)
		}
	})
}

// A Gemm's result is what a read on another stream sees: it waits for the
// Gemm, which writes C.
func TestAReadOfCOnAnotherStreamSeesTheGemm(t *testing.T) {
	testenv.OnPrimary(t, 0) // for the gate
	f := newFixture(t)
	testenv.Must(t, hostmem.Drain(testenv.Context(t)))
	home := newStream(t, f.ctx)
	a := upload(t, home, []float32{1, 2, 3, 4})
	c := upload(t, home, []float32{0, 0, 0, 0})
	testenv.Must(t, home.Sync(testenv.Context(t)))
	gate := testenv.NewGate(t)
	gate.Hold(t, f.s.Raw())
	testenv.Must(t, cublas.Gemm(f.h, cublas.NoTrans, cublas.NoTrans, 2, 2, 2, 1, a, 2, a, 2, 0, c, 2))
	got := make([]float32, 4)
	done := testenv.WaitAsync(func() error { return cuda.CopyToHost(home, got, c) })
	testenv.StillWaiting(t, "a read of C on another stream", done)
	gate.Open()
	testenv.Finished(t, "the read of C", done)
	if !slices.Equal(got, []float32{7, 10, 15, 22}) {
		t.Errorf("C read on another stream = %v, want the Gemm's [7 10 15 22]", got)
	}
}

// NewBatch keeps its own copy of the list: changing the caller's slice
// afterwards changes nothing in the Batch.
func TestNewBatchDoesNotAliasTheCallersSlice(t *testing.T) {
	f := newFixture(t)
	const m = 2
	a := upload(t, f.s, []float32{1, 0, 0, 1}) // the identity
	b1, b2 := upload(t, f.s, []float32{1, 2, 3, 4}), upload(t, f.s, []float32{5, 6, 7, 8})
	other := upload(t, f.s, []float32{-1, -1, -1, -1})
	c1, c2 := upload(t, f.s, make([]float32, 4)), upload(t, f.s, make([]float32, 4))
	bs := []cuda.Slice[float32]{b1, b2}
	bb, err := cublas.NewBatch(f.s, bs)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, bb.Free()) })
	ab, err := cublas.NewBatch(f.s, []cuda.Slice[float32]{a, a})
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, ab.Free()) })
	cs := []cuda.Slice[float32]{c1, c2}
	cb, err := cublas.NewBatch(f.s, cs)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, cb.Free()) })
	bs[1] = other
	cs[0] = other
	if bb.Len() != 2 {
		t.Fatalf("Len = %d", bb.Len())
	}
	testenv.Must(t, cublas.GemmBatchedEx(f.h, cublas.NoTrans, cublas.NoTrans, m, m, m, 1, ab, m, bb, m, 0, cb, m, cublas.CUBLAS_COMPUTE_32F))
	if got := download(t, f.s, c1); !slices.Equal(got, []float32{1, 2, 3, 4}) {
		t.Errorf("C[0] = %v, want B[0]", got)
	}
	if got := download(t, f.s, c2); !slices.Equal(got, []float32{5, 6, 7, 8}) {
		t.Errorf("C[1] = %v, want B[1]", got)
	}
	if got := download(t, f.s, other); !slices.Equal(got, []float32{-1, -1, -1, -1}) {
		t.Errorf("the Slice put in the caller's list afterwards was written: %v", got)
	}
	// Bad lists: none, and a zero Slice.
	if _, err := cublas.NewBatch(f.s, []cuda.Slice[float32]{}); !errors.Is(err, cublas.ErrShape) {
		t.Errorf("NewBatch of no Slices: %v", err)
	}
	if _, err := cublas.NewBatch(f.s, []cuda.Slice[float32]{a, {}}); !errors.Is(err, cuda.ErrFreed) || !strings.Contains(err.Error(), "Slice 1") {
		t.Errorf("NewBatch with a zero Slice: %v", err)
	}
	var nilBatch *cublas.Batch[float32]
	if err := nilBatch.Free(); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("Free of a nil Batch: %v", err)
	}
	if err := cublas.GemmBatchedEx(f.h, cublas.NoTrans, cublas.NoTrans, m, m, m, 1, nilBatch, m, bb, m, 0, cb, m, cublas.CUBLAS_COMPUTE_32F); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("GemmBatchedEx with a nil Batch: %v", err)
	}
}

// After Close every call and method fails with ErrClosed, at once and as
// often as it is called (none keeps the handle's lock), and a nil handle
// is ErrNil everywhere.
func TestEveryCallAfterCloseIsClosedAndNeverBlocks(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, []float32{1, 2, 3, 4})
	h, err := cublas.New(f.s)
	testenv.Must(t, err)
	testenv.Must(t, h.Close())
	N := cublas.NoTrans
	calls := func(h *cublas.BLAS) map[string]func() error {
		return map[string]func() error{
			"Gemm":         func() error { return cublas.Gemm(h, N, N, 2, 2, 2, 1, x, 2, x, 2, 0, x, 2) },
			"GemmRowMajor": func() error { return cublas.GemmRowMajor(h, N, N, 2, 2, 2, 1, x, 2, x, 2, 0, x, 2) },
			"GemmEx": func() error {
				return cublas.GemmEx(h, N, N, 2, 2, 2, 1, x, 2, x, 2, 0, x, 2, cublas.CUBLAS_COMPUTE_32F)
			},
			"GemmStridedBatched": func() error {
				return cublas.GemmStridedBatched(h, N, N, 2, 2, 2, 1, x, 2, 0, x, 2, 0, 0, x, 2, 4, 1)
			},
			"Gemv": func() error { return cublas.Gemv(h, N, 2, 2, 1, x, 2, x, 1, 0, x, 1) },
			"Trsm": func() error {
				return cublas.Trsm(h, cublas.CUBLAS_SIDE_LEFT, cublas.CUBLAS_FILL_MODE_LOWER, N, cublas.CUBLAS_DIAG_UNIT, 2, 2, 1, x, 2, x, 2)
			},
			"Axpy":          func() error { return cublas.Axpy(h, 2, 1, x, 1, x, 1) },
			"Scal":          func() error { return cublas.Scal(h, 2, 1, x, 1) },
			"Dot":           func() error { _, err := cublas.Dot(h, 2, x, 1, x, 1); return err },
			"Nrm2":          func() error { _, err := cublas.Nrm2(h, 2, x, 1); return err },
			"SetStream":     func() error { return h.SetStream(f.s) },
			"SetWorkspace":  func() error { return h.SetWorkspace(cuda.Slice[byte]{}) },
			"SetMathMode":   func() error { return h.SetMathMode(cublas.CUBLAS_DEFAULT_MATH) },
			"MathMode":      func() error { _, err := h.MathMode(); return err },
			"Close":         h.Close,
			"GemmBatchedEx": func() error { return gemmBatchedOne(t, f, h, x) },
		}
	}
	for name, call := range calls(h) {
		for i := range 2 {
			if err := bounded(t, name+" after Close", call); !errors.Is(err, cuda.ErrClosed) {
				t.Errorf("%s after Close (call %d): %v, want ErrClosed", name, i+1, err)
			}
		}
	}
	if s := h.Stream(); s != nil {
		t.Errorf("Stream after Close = %v, want nil", s)
	}
	if h.Raw() == 0 {
		t.Error("Raw after Close is 0: it should still name the handle")
	}
	var nilH *cublas.BLAS
	for name, call := range calls(nilH) {
		if err := bounded(t, name+" on a nil handle", call); !errors.Is(err, cuda.ErrNil) {
			t.Errorf("%s on a nil handle: %v, want ErrNil", name, err)
		}
	}
	if nilH.Raw() != 0 || nilH.Stream() != nil {
		t.Error("a nil handle has a Raw or a Stream")
	}
	// The open handle beside it still works.
	testenv.Must(t, cublas.Axpy(f.h, 2, 1, x, 1, x, 1))
}

// gemmBatchedOne is GemmBatchedEx of one 2x2 product on h, its Batches
// made and freed for the call.
func gemmBatchedOne(t *testing.T, f *fixture, h *cublas.BLAS, x cuda.Slice[float32]) error {
	b, err := cublas.NewBatch(f.s, []cuda.Slice[float32]{x})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { testenv.Must(t, b.Free()) }()
	return cublas.GemmBatchedEx(h, cublas.NoTrans, cublas.NoTrans, 2, 2, 2, 1, b, 2, b, 2, 0, b, 2, cublas.CUBLAS_COMPUTE_32F)
}

// GemmBatchedEx allocates once a call (the list of the Slices it holds),
// whatever the Batches' length and with a workspace set.
func TestGemmBatchedExAllocatesOnce(t *testing.T) {
	f := newFixture(t)
	ws, err := cuda.Alloc[byte](f.s, 1<<10)
	testenv.Must(t, err)
	testenv.Must(t, f.h.SetWorkspace(ws))
	t.Cleanup(func() {
		testenv.Must(t, f.h.SetWorkspace(cuda.Slice[byte]{}))
		testenv.Must(t, ws.Free())
	})
	for _, count := range []int{1, 3, 8} {
		xs := make([]cuda.Slice[float32], count)
		for i := range xs {
			xs[i] = upload(t, f.s, []float32{1, 2, 3, 4})
		}
		b, err := cublas.NewBatch(f.s, xs)
		testenv.Must(t, err)
		t.Cleanup(func() { testenv.Must(t, b.Free()) })
		n := testenv.AllocsPerRunMin(20, func() {
			if err := cublas.GemmBatchedEx(f.h, cublas.NoTrans, cublas.NoTrans, 2, 2, 2, 1, b, 2, b, 2, 0, b, 2, cublas.CUBLAS_COMPUTE_32F); err != nil {
				t.Fatal(err)
			}
		})
		if n != 1 {
			t.Errorf("a batch of %d: %v allocations a call, want 1", count, n)
		}
	}
}

// Sizes at the edge of overflow that do not overflow are checked as sizes:
// the error gives the exact count the Slice would need, not an overflow.
func TestTheLargestSizesThatFitAreCountedExactly(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, make([]float32, 8))
	N := cublas.NoTrans
	for _, c := range []struct {
		name, want string
		err        error
	}{
		// 1 x 2 with ldA MaxInt-1: (2-1)*(MaxInt-1) + 1 = MaxInt.
		{"CheckMatrix at MaxInt", "needs 9223372036854775807 elements", cublas.CheckMatrix("Check", "A", 1, 2, math.MaxInt-1, 8)},
		{"CheckMatrix at MaxInt/2", "needs 4611686018427387904 elements", cublas.CheckMatrix("Check", "A", 1, 2, math.MaxInt/2, 8)},
		{"CheckMatrix over MaxInt", "overflow", cublas.CheckMatrix("Check", "A", 2, 2, math.MaxInt-1, 8)},
		// x of 2 elements with incx MaxInt-1: 1 + (MaxInt-1) = MaxInt.
		{"Axpy at MaxInt", "need 9223372036854775807", cublas.Axpy(f.h, 2, 1, x, math.MaxInt-1, x, 1)},
		{"Axpy at MaxInt/2", "need 4611686018427387904", cublas.Axpy(f.h, 2, 1, x, math.MaxInt/2, x, 1)},
		{"Axpy over MaxInt", "overflow", cublas.Axpy(f.h, 2, 1, x, math.MaxInt, x, 1)},
		{"Axpy over MaxInt, three", "overflow", cublas.Axpy(f.h, 3, 1, x, math.MaxInt/2+1, x, 1)},
		// 2 matrices of 4 elements, strideA MaxInt-4 apart: MaxInt in all.
		{"GemmStridedBatched at MaxInt", "need 9223372036854775807", cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, x, 2, math.MaxInt-4, x, 2, 0, 0, x, 2, 4, 2)},
		{"GemmStridedBatched over MaxInt", "overflow", cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, x, 2, math.MaxInt-3, x, 2, 0, 0, x, 2, 4, 2)},
		{"GemmStridedBatched at MaxInt/2, three", "need 9223372036854775806", cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, x, 2, (math.MaxInt-4)/2, x, 2, 0, 0, x, 2, 4, 3)},
	} {
		if !errors.Is(c.err, cublas.ErrShape) || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrShape saying %q", c.name, c.err, c.want)
		}
	}
}

// ScalarOf writes alpha or beta in the compute type's scale type: float32
// for the 32F types, float64 for 64F, half for 16F, int32 for 32I.
func TestScalarOfWritesTheScaleType(t *testing.T) {
	for _, c := range []struct {
		compute cublas.ComputeType
		want    []byte
	}{
		{cublas.CUBLAS_COMPUTE_32F_FAST_TF32, le32(math.Float32bits(1.5))},
		{cublas.CUBLAS_COMPUTE_64F, le64(math.Float64bits(1.5))},
		{cublas.CUBLAS_COMPUTE_16F, []byte{0x00, 0x3e}}, // 1.5 as a half
		{cublas.CUBLAS_COMPUTE_32I, le32(1)},
	} {
		s, err := cublas.ScalarOf(c.compute, 1.5)
		if err != nil || !slices.Equal(s[:len(c.want)], c.want) || slices.ContainsFunc(s[len(c.want):], func(b byte) bool { return b != 0 }) {
			t.Errorf("ScalarOf(%v, 1.5) = % x, %v; want % x", c.compute, s, err, c.want)
		}
	}
	if _, err := cublas.ScalarOf(12345, 1); !errors.Is(err, cublas.ErrShape) {
		t.Errorf("an unknown compute type: %v", err)
	}
}

func le32(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }
func le64(v uint64) []byte { return append(le32(uint32(v)), le32(uint32(v>>32))...) }

// Dot and Nrm2 work with a workspace set: the workspace is one more
// operand beside their vectors.
func TestDotAndNrm2WithAWorkspace(t *testing.T) {
	f := newFixture(t)
	ws, err := cuda.Alloc[byte](f.s, 1<<10)
	testenv.Must(t, err)
	testenv.Must(t, f.h.SetWorkspace(ws))
	t.Cleanup(func() {
		testenv.Must(t, f.h.SetWorkspace(cuda.Slice[byte]{}))
		testenv.Must(t, ws.Free())
	})
	x := upload(t, f.s, []float64{3, 4})
	y := upload(t, f.s, []float64{1, 2})
	if d, err := cublas.Dot(f.h, 2, x, 1, y, 1); err != nil || d != 11 {
		t.Errorf("Dot = %v, %v; want 11", d, err)
	}
	if n, err := cublas.Nrm2(f.h, 2, x, 1); err != nil || math.Abs(n-5) > 1e-12 {
		t.Errorf("Nrm2 = %v, %v; want 5", n, err)
	}
}
