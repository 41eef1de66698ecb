//go:build gpu

package cublas_test

import (
	"math"
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// Larger products on the GPU against the CPU: SGEMM and DGEMM within their
// precision, GemmEx with TF32 within TF32's, and BF16 and FP16 inputs
// (float32 accumulation and output) against the CPU's product of the same
// rounded inputs.
func TestGPUGemmsAgainstTheCPU(t *testing.T) {
	f := newFixture(t)
	const m, n, k = 256, 192, 320
	ha, hb := randoms[float32](m*k, 31), randoms[float32](k*n, 32)
	a, b := upload(t, f.s, ha), upload(t, f.s, hb)
	want := refGemm(cublas.NoTrans, cublas.NoTrans, m, n, k, 1, ha, m, hb, k, 0, make([]float32, m*n), m)
	c := upload(t, f.s, make([]float32, m*n))
	testenv.Must(t, cublas.Gemm(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, 1, a, m, b, k, 0, c, m))
	sgemm := download(t, f.s, c)
	if i, ok := within(sgemm, want, 1e-5); !ok {
		t.Errorf("SGEMM: C[%d] = %v, want %v", i, sgemm[i], want[i])
	}

	da, db := randoms[float64](m*k, 33), randoms[float64](k*n, 34)
	dc := upload(t, f.s, make([]float64, m*n))
	testenv.Must(t, cublas.Gemm(f.h, cublas.Trans, cublas.NoTrans, m, n, k, 1, upload(t, f.s, da), k, upload(t, f.s, db), k, 0, dc, m))
	if i, ok := within(download(t, f.s, dc), refGemm(cublas.Trans, cublas.NoTrans, m, n, k, 1, da, k, db, k, 0, make([]float64, m*n), m), 1e-13); !ok {
		t.Errorf("DGEMM: C[%d] off", i)
	}

	tf := upload(t, f.s, make([]float32, m*n))
	testenv.Must(t, cublas.GemmEx(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, 1, a, m, b, k, 0, tf, m, cublas.CUBLAS_COMPUTE_32F_FAST_TF32))
	got := download(t, f.s, tf)
	if i, ok := within(got, want, 5e-3); !ok {
		t.Errorf("TF32: C[%d] = %v, want %v (SGEMM %v)", i, got[i], want[i], sgemm[i])
	}

	bfa, bfb := make([]cuda.BFloat16, m*k), make([]cuda.BFloat16, k*n)
	ha16, hb16 := make([]cuda.Half, m*k), make([]cuda.Half, k*n)
	ra, rb := make([]float32, m*k), make([]float32, k*n)
	ra16, rb16 := make([]float32, m*k), make([]float32, k*n)
	for i, v := range ha {
		bfa[i], ha16[i] = cuda.BFloat16Of(v), cuda.HalfOf(v)
		ra[i], ra16[i] = bfa[i].Float32(), ha16[i].Float32()
	}
	for i, v := range hb {
		bfb[i], hb16[i] = cuda.BFloat16Of(v), cuda.HalfOf(v)
		rb[i], rb16[i] = bfb[i].Float32(), hb16[i].Float32()
	}
	out := upload(t, f.s, make([]float32, m*n))
	testenv.Must(t, cublas.GemmEx(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, 1, upload(t, f.s, bfa), m, upload(t, f.s, bfb), k, 0, out, m, cublas.CUBLAS_COMPUTE_32F))
	if i, ok := within(download(t, f.s, out), refGemm(cublas.NoTrans, cublas.NoTrans, m, n, k, 1, ra, m, rb, k, 0, make([]float32, m*n), m), 1e-4); !ok {
		t.Errorf("BF16: C[%d] off", i)
	}
	testenv.Must(t, cublas.GemmEx(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, 1, upload(t, f.s, ha16), m, upload(t, f.s, hb16), k, 0, out, m, cublas.CUBLAS_COMPUTE_32F))
	if i, ok := within(download(t, f.s, out), refGemm(cublas.NoTrans, cublas.NoTrans, m, n, k, 1, ra16, m, rb16, k, 0, make([]float32, m*n), m), 1e-4); !ok {
		t.Errorf("FP16: C[%d] off", i)
	}
}

// Nrm2, Scal, Gemv and Trsm on the real library (the stand-in has none).
func TestGPULevel1And2AndTrsm(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, []float64{3, 4, 12})
	if r, err := cublas.Nrm2(f.h, 3, x, 1); err != nil || math.Abs(r-13) > 1e-12 {
		t.Errorf("nrm2 = %v, %v; want 13", r, err)
	}
	testenv.Must(t, cublas.Scal(f.h, 3, 2.0, x, 1))
	if got := download(t, f.s, x); got[0] != 6 || got[2] != 24 {
		t.Errorf("scal: %v", got)
	}
	a := upload(t, f.s, []float32{1, 2, 3, 4}) // [[1 3] [2 4]]
	v := upload(t, f.s, []float32{1, 1})
	y := upload(t, f.s, []float32{0, 0})
	testenv.Must(t, cublas.Gemv(f.h, cublas.NoTrans, 2, 2, 1, a, 2, v, 1, 0, y, 1))
	if got := download(t, f.s, y); got[0] != 4 || got[1] != 6 {
		t.Errorf("gemv: %v", got)
	}
	// L = [[2 0] [1 4]] (lower), solve L X = B for B = [[2] [9]]: X = [1 2].
	l := upload(t, f.s, []float32{2, 1, 0, 4})
	bb := upload(t, f.s, []float32{2, 9})
	testenv.Must(t, cublas.Trsm(f.h, cublas.CUBLAS_SIDE_LEFT, cublas.CUBLAS_FILL_MODE_LOWER, cublas.NoTrans, cublas.CUBLAS_DIAG_NON_UNIT, 2, 1, 1, l, 2, bb, 2))
	if got := download(t, f.s, bb); math.Abs(float64(got[0]-1)) > 1e-6 || math.Abs(float64(got[1]-2)) > 1e-6 {
		t.Errorf("trsm: %v", got)
	}
}

// The new forms at a backend's sizes on the GPU, against the CPU: a
// row-major strided batch of FP16 activations times one broadcast FP16
// weight matrix (float32 out), and the same product with alpha and beta
// read from device memory through a captured graph launched twice with
// different alphas.
func TestGPUStridedBatchedExRowMajorAndDeviceScalars(t *testing.T) {
	f := newFixture(t)
	const m, n, k, batch = 64, 96, 128, 8
	hx, hw := randoms[float64](m*k*batch, 61), randoms[float64](k*n, 62)
	x, w := upload(t, f.s, halves(hx)), upload(t, f.s, halves(hw))
	rx, rw := rounded(hx, false), rounded(hw, false)
	y := upload(t, f.s, make([]float32, m*n*batch))
	testenv.Must(t, cublas.GemmStridedBatchedExRowMajor(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, 1, x, k, m*k,
		w, n, 0, 0, y, n, m*n, batch, cublas.CUBLAS_COMPUTE_32F))
	check := func(what string, alpha float64) {
		t.Helper()
		got := toF64(download(t, f.s, y))
		for i := range batch {
			want := rowMajor(m, n, k, alpha, rx[i*m*k:], rw, 0, make([]float64, m*n))
			if j, ok := within(got[i*m*n:(i+1)*m*n], want, 1e-4); !ok {
				t.Fatalf("%s: Y[%d][%d] = %v, want %v", what, i, j, got[i*m*n+j], want[j])
			}
		}
	}
	check("row-major", 1)

	alpha, beta := upload(t, f.s, []float32{1}), upload(t, f.s, []float32{0})
	// Row-major through the column-major call: Y^T = W^T X^T.
	g, err := f.s.Capture(func(s *cuda.Stream) error {
		return cublas.GemmStridedBatchedExDevice(f.h, cublas.NoTrans, cublas.NoTrans, n, m, k, alpha, w, n, 0, x, k, m*k,
			beta, y, n, m*n, batch, cublas.CUBLAS_COMPUTE_32F)
	})
	testenv.Must(t, err)
	defer func() { testenv.Must(t, g.Destroy()) }()
	e, err := g.Instantiate()
	testenv.Must(t, err)
	defer func() { testenv.Must(t, e.Destroy()) }()
	for _, al := range []float32{2, -0.5} {
		testenv.Must(t, cuda.CopyToDevice(f.s, alpha, []float32{al}))
		testenv.Must(t, f.s.LaunchGraph(e))
		check("device scalars", float64(al))
	}
}
