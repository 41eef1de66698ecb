package cublas_test

import (
	"fmt"
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/internal/testenv"
)

// These run on the simulator's cuBLAS stand-in and, under -tags gpu, on
// the real library: the same calls give the same results (the
// conformance of the stand-in).

var ops = []cublas.Operation{cublas.NoTrans, cublas.Trans}

func testGemm[T cublas.Float](t *testing.T, tol float64) {
	f := newFixture(t)
	const m, n, k = 5, 3, 4
	for _, ta := range ops {
		for _, tb := range ops {
			t.Run(fmt.Sprintf("%v_%v", ta, tb), func(t *testing.T) {
				lda, ldb, ldc := m+1, k+2, m+3 // leading dimensions beyond the rows
				if ta != cublas.NoTrans {
					lda = k + 1
				}
				if tb != cublas.NoTrans {
					ldb = n + 2
				}
				ha, hb, hc := randoms[T](lda*max(m, k), 1), randoms[T](ldb*max(n, k), 2), randoms[T](ldc*n, 3)
				a, b, c := upload(t, f.s, ha), upload(t, f.s, hb), upload(t, f.s, hc)
				testenv.Must(t, cublas.Gemm(f.h, ta, tb, m, n, k, 1.5, a, lda, b, ldb, -0.5, c, ldc))
				got, want := download(t, f.s, c), refGemm(ta, tb, m, n, k, 1.5, ha, lda, hb, ldb, -0.5, hc, ldc)
				if i, ok := within(got, want, tol); !ok {
					t.Fatalf("C[%d] = %v, want %v", i, got[i], want[i])
				}
			})
		}
	}
}

func TestSgemmMatchesTheCPU(t *testing.T) { testGemm[float32](t, 1e-5) }
func TestDgemmMatchesTheCPU(t *testing.T) { testGemm[float64](t, 1e-12) }

// GemmRowMajor multiplies row-major matrices: [[1 2 3] [4 5 6]] times
// [[1 0] [0 1] [1 1]] is [[4 5] [10 11]].
func TestGemmRowMajor(t *testing.T) {
	f := newFixture(t)
	a := upload(t, f.s, []float32{1, 2, 3, 4, 5, 6})
	b := upload(t, f.s, []float32{1, 0, 0, 1, 1, 1})
	c := upload(t, f.s, make([]float32, 4))
	testenv.Must(t, cublas.GemmRowMajor(f.h, cublas.NoTrans, cublas.NoTrans, 2, 2, 3, 1, a, 3, b, 2, 0, c, 2))
	if got, want := download(t, f.s, c), []float32{4, 5, 10, 11}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("C = %v, want %v", got, want)
	}
}

func TestGemmStridedBatchedMatchesTheCPU(t *testing.T) {
	f := newFixture(t)
	const m, n, k, batch = 3, 2, 4, 3
	sa, sb, sc := m*k+1, k*n+2, m*n
	ha, hb, hc := randoms[float64](sa*batch, 4), randoms[float64](sb*batch, 5), randoms[float64](sc*batch, 6)
	a, b, c := upload(t, f.s, ha), upload(t, f.s, hb), upload(t, f.s, hc)
	testenv.Must(t, cublas.GemmStridedBatched(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, 2.0, a, m, sa, b, k, sb, 1.0, c, m, sc, batch))
	got := download(t, f.s, c)
	for i := range batch {
		want := refGemm(cublas.NoTrans, cublas.NoTrans, m, n, k, 2.0, ha[i*sa:], m, hb[i*sb:], k, 1.0, hc[i*sc:i*sc+sc], m)
		if j, ok := within(got[i*sc:i*sc+sc], want, 1e-12); !ok {
			t.Fatalf("batch %d: C[%d] = %v, want %v", i, j, got[i*sc+j], want[j])
		}
	}
}

func TestAxpyAndDot(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, []float32{1, 2, 3, 4, 5, 6})
	y := upload(t, f.s, []float32{10, 20, 30, 40, 50, 60})
	// Every other element of x, into the first three of y, backwards.
	testenv.Must(t, cublas.Axpy(f.h, 3, 2, x, 2, y, -1))
	if got, want := download(t, f.s, y), []float32{10 + 2*5, 20 + 2*3, 30 + 2*1, 40, 50, 60}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("y = %v, want %v", got, want)
	}
	xd := upload(t, f.s, []float64{1, 2, 3})
	yd := upload(t, f.s, []float64{4, 5, 6})
	d, err := cublas.Dot(f.h, 3, xd, 1, yd, 1)
	testenv.Must(t, err)
	if d != 32 {
		t.Errorf("dot = %v, want 32", d)
	}
	// The dot waits for the work before it on the stream.
	testenv.Must(t, cublas.Axpy(f.h, 3, 1.0, xd, 1, yd, 1))
	if d, err := cublas.Dot(f.h, 3, xd, 1, yd, 1); err != nil || d != 46 {
		t.Errorf("dot after the axpy = %v, %v; want 46", d, err)
	}
}

// GemmEx on float32 data: full float32 arithmetic, and TF32 tensor cores
// (10-bit mantissas in: within about 1e-3 of the float32 result).
func TestGemmExFloat32AndTF32(t *testing.T) {
	f := newFixture(t)
	const m, n, k = 8, 8, 16
	ha, hb := randoms[float32](m*k, 7), randoms[float32](k*n, 8)
	a, b := upload(t, f.s, ha), upload(t, f.s, hb)
	want := refGemm(cublas.NoTrans, cublas.NoTrans, m, n, k, 1, ha, m, hb, k, 0, make([]float32, m*n), m)
	for _, c := range []struct {
		compute cublas.ComputeType
		tol     float64
	}{
		{cublas.CUBLAS_COMPUTE_32F, 1e-5},
		{cublas.CUBLAS_COMPUTE_32F_FAST_TF32, 5e-3},
	} {
		t.Run(c.compute.String(), func(t *testing.T) {
			out := upload(t, f.s, make([]float32, m*n))
			testenv.Must(t, cublas.GemmEx(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, 1, a, m, b, k, 0, out, m, c.compute))
			if i, ok := within(download(t, f.s, out), want, c.tol); !ok {
				t.Fatalf("C[%d] off by more than %g", i, c.tol)
			}
		})
	}
}

// The math mode set is the one read back.
func TestMathModeRoundTrip(t *testing.T) {
	f := newFixture(t)
	testenv.Must(t, f.h.SetMathMode(cublas.CUBLAS_TF32_TENSOR_OP_MATH))
	m, err := f.h.MathMode()
	testenv.Must(t, err)
	if m != cublas.CUBLAS_TF32_TENSOR_OP_MATH {
		t.Errorf("math mode %v", m)
	}
}
