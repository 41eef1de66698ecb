package cublas_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// refStrided is refGemm over a strided batch, in float64, on inputs
// already converted to float64.
func refStrided(ta, tb cublas.Operation, m, n, k int, alpha float64, a []float64, lda, sa int, b []float64, ldb, sb int,
	beta float64, c []float64, ldc, sc, batch int) []float64 {
	out := append([]float64(nil), c...)
	for i := range batch {
		r := refGemm(ta, tb, m, n, k, alpha, a[i*sa:], lda, b[i*sb:], ldb, beta, out[i*sc:], ldc)
		copy(out[i*sc:], r[:ldc*(n-1)+m])
	}
	return out
}

func halves(v []float64) []cuda.Half {
	h := make([]cuda.Half, len(v))
	for i, x := range v {
		h[i] = cuda.HalfOf(float32(x))
	}
	return h
}

func bf16s(v []float64) []cuda.BFloat16 {
	h := make([]cuda.BFloat16, len(v))
	for i, x := range v {
		h[i] = cuda.BFloat16Of(float32(x))
	}
	return h
}

// rounded is v as its 16-bit inputs hold it, so that the reference sees
// the same numbers the library does.
func rounded(v []float64, bf bool) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		if bf {
			out[i] = float64(cuda.BFloat16Of(float32(x)).Float32())
		} else {
			out[i] = float64(cuda.HalfOf(float32(x)).Float32())
		}
	}
	return out
}

// GemmStridedBatchedEx with 16-bit inputs and float32 outputs, a
// transposed A and A broadcast (stride 0) to every product, matches the
// CPU on the inputs' own values.
func TestGemmStridedBatchedExMixedTypesMatchTheCPU(t *testing.T) {
	f := newFixture(t)
	const m, n, k, batch = 3, 4, 5, 3
	N, T := cublas.NoTrans, cublas.Trans
	ha := randoms[float64](k*m, 21)         // op(A) = A^T: A is k x m, one matrix
	hb := randoms[float64](k*n*batch, 22)   // B: k x n each
	hc := randoms[float64](m*n*batch+2, 23) // C: m x n each, 2 spare at the end
	for _, bf := range []bool{false, true} {
		name := "Half"
		if bf {
			name = "BFloat16"
		}
		t.Run(name, func(t *testing.T) {
			c := upload(t, f.s, toF32(hc))
			want := refStrided(T, N, m, n, k, 0.5, rounded(ha, bf), k, 0, rounded(hb, bf), k, k*n, 2, toF64(toF32(hc)), m, m*n, batch)
			var err error
			if bf {
				a, b := upload(t, f.s, bf16s(ha)), upload(t, f.s, bf16s(hb))
				err = cublas.GemmStridedBatchedEx(f.h, T, N, m, n, k, 0.5, a, k, 0, b, k, k*n, 2, c, m, m*n, batch, cublas.CUBLAS_COMPUTE_32F)
			} else {
				a, b := upload(t, f.s, halves(ha)), upload(t, f.s, halves(hb))
				err = cublas.GemmStridedBatchedEx(f.h, T, N, m, n, k, 0.5, a, k, 0, b, k, k*n, 2, c, m, m*n, batch, cublas.CUBLAS_COMPUTE_32F)
			}
			testenv.Must(t, err)
			if i, ok := within(toF64(download(t, f.s, c)), want, 1e-5); !ok {
				t.Fatalf("C[%d] = %v, want %v", i, download(t, f.s, c)[i], want[i])
			}
		})
	}
}

func toF32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func toF64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// rowMajor multiplies row-major matrices on the host: C = alpha*A*B +
// beta*C, A m x k, B k x n.
func rowMajor(m, n, k int, alpha float64, a, b []float64, beta float64, c []float64) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			s := 0.0
			for p := range k {
				s += a[i*k+p] * b[p*n+j]
			}
			out[i*n+j] = alpha*s + beta*c[i*n+j]
		}
	}
	return out
}

// The row-major helper multiplies a batch of row-major activations by one
// row-major weight matrix (B broadcast with stride 0), as a Go program
// lays them out.
func TestGemmStridedBatchedExRowMajorBroadcast(t *testing.T) {
	f := newFixture(t)
	const m, n, k, batch = 2, 3, 4, 5
	hx := randoms[float32](m*k*batch, 31)
	hw := randoms[float32](k*n, 32)
	hy := randoms[float32](m*n*batch, 33)
	x, w, y := upload(t, f.s, hx), upload(t, f.s, hw), upload(t, f.s, hy)
	testenv.Must(t, cublas.GemmStridedBatchedExRowMajor(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, 2, x, k, m*k,
		w, n, 0, -1, y, n, m*n, batch, cublas.CUBLAS_COMPUTE_32F))
	got := toF64(download(t, f.s, y))
	for i := range batch {
		want := rowMajor(m, n, k, 2, toF64(hx[i*m*k:]), toF64(hw), -1, toF64(hy[i*m*n:]))
		if j, ok := within(got[i*m*n:(i+1)*m*n], want, 1e-5); !ok {
			t.Fatalf("Y[%d][%d] = %v, want %v", i, j, got[i*m*n+j], want[j])
		}
	}
	// Its shape errors name its own arguments: A is m x k row-major,
	// so lda below k is named.
	err := cublas.GemmStridedBatchedExRowMajor(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, 1, x, k-1, m*k,
		w, n, 0, 0, y, n, m*n, batch, cublas.CUBLAS_COMPUTE_32F)
	var se *cublas.ShapeError
	if !errors.As(err, &se) || se.Arg != "ldA" || se.Value != k-1 {
		t.Errorf("lda %d: %v (%+v)", k-1, err, se)
	}
}

// With alpha and beta in device memory, GemmExDevice computes with them,
// and leaves the handle in host pointer mode.
func TestGemmExDeviceScalars(t *testing.T) {
	f := newFixture(t)
	const m, n, k = 3, 2, 4
	ha, hb, hc := randoms[float32](m*k, 41), randoms[float32](k*n, 42), randoms[float32](m*n, 43)
	a, b, c := upload(t, f.s, ha), upload(t, f.s, hb), upload(t, f.s, hc)
	alpha, beta := upload(t, f.s, []float32{3}), upload(t, f.s, []float32{-2})
	// The stand-in's cublasGemmEx reads device scalars when called, not
	// when the work runs (its strided form reads them when run: see the
	// captured-graph test): let the uploads land first.
	testenv.Must(t, f.s.Sync(testenv.Context(t)))
	testenv.Must(t, cublas.GemmExDevice(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, alpha, a, m, b, k, beta, c, m, cublas.CUBLAS_COMPUTE_32F))
	want := refGemm(cublas.NoTrans, cublas.NoTrans, m, n, k, 3, ha, m, hb, k, -2, hc, m)
	if i, ok := within(download(t, f.s, c), want, 1e-5); !ok {
		t.Fatalf("C[%d] = %v, want %v", i, download(t, f.s, c)[i], want[i])
	}
	var mode cublas.PointerMode
	testenv.Must(t, cublas.GetPointerMode(f.h.Raw(), &mode))
	if mode != cublas.CUBLAS_POINTER_MODE_HOST {
		t.Errorf("pointer mode after the call: %v", mode)
	}
	// Scalars of another type than the compute type's are refused by name.
	alpha64, beta64 := upload(t, f.s, []float64{1}), upload(t, f.s, []float64{0})
	err := cublas.GemmExDevice(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, alpha64, a, m, b, k, beta64, c, m, cublas.CUBLAS_COMPUTE_32F)
	var se *cublas.ShapeError
	if !errors.As(err, &se) || se.Arg != "alpha" || !errors.Is(err, cublas.ErrShape) {
		t.Errorf("float64 scalars for a 32F compute type: %v", err)
	}
	if err := cublas.GemmExDevice(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, cuda.Slice[float32]{}, a, m, b, k, beta, c, m,
		cublas.CUBLAS_COMPUTE_32F); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("zero alpha Slice: %v", err)
	}
}

// A captured strided-batched GemmEx with device scalars reads them at
// each launch: changing alpha between launches changes the result with
// no new capture.
func TestDeviceScalarsInACapturedGraph(t *testing.T) {
	f := newFixture(t)
	const m, n, k, batch = 2, 2, 3, 2
	ha, hb := randoms[float32](m*k*batch, 51), randoms[float32](k*n*batch, 52)
	a, b := upload(t, f.s, ha), upload(t, f.s, hb)
	c := upload(t, f.s, make([]float32, m*n*batch))
	alpha, beta := upload(t, f.s, []float32{1}), upload(t, f.s, []float32{0})
	testenv.Must(t, f.s.Sync(testenv.Context(t)))
	g, err := f.s.Capture(func(s *cuda.Stream) error {
		return cublas.GemmStridedBatchedExDevice(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, alpha, a, m, m*k, b, k, k*n,
			beta, c, m, m*n, batch, cublas.CUBLAS_COMPUTE_32F)
	})
	testenv.Must(t, err)
	defer func() { testenv.Must(t, g.Destroy()) }()
	e, err := g.Instantiate()
	testenv.Must(t, err)
	defer func() { testenv.Must(t, e.Destroy()) }()
	for _, al := range []float32{1, -3, 0.25} {
		testenv.Must(t, cuda.CopyToDevice(f.s, alpha, []float32{al}))
		testenv.Must(t, f.s.LaunchGraph(e))
		want := refStrided(cublas.NoTrans, cublas.NoTrans, m, n, k, float64(al), toF64(ha), m, m*k, toF64(hb), k, k*n,
			0, make([]float64, m*n*batch), m, m*n, batch)
		if i, ok := within(toF64(download(t, f.s, c)), want, 1e-5); !ok {
			t.Fatalf("alpha %v: C[%d] = %v, want %v", al, i, download(t, f.s, c)[i], want[i])
		}
	}
}

// A shape error is a *ShapeError with the argument and the sizes, and
// still ErrShape.
func TestShapeErrorHasTheSizes(t *testing.T) {
	f := newFixture(t)
	s6 := upload(t, f.s, make([]float32, 6))
	s12 := upload(t, f.s, make([]float32, 12))
	err := cublas.Gemm(f.h, cublas.NoTrans, cublas.NoTrans, 3, 1, 4, 1, s6, 3, s12, 4, 0, s12, 3)
	var se *cublas.ShapeError
	if !errors.As(err, &se) || !errors.Is(err, cublas.ErrShape) {
		t.Fatalf("got %v", err)
	}
	want := cublas.ShapeError{Pkg: "cublas", Call: "Gemm", Arg: "A", Rows: 3, Cols: 4, LD: 3, Count: 1, Need: 12, Len: 6, Reason: se.Reason}
	if *se != want {
		t.Errorf("got %+v, want %+v", *se, want)
	}
	err = cublas.GemmStridedBatchedEx(f.h, cublas.NoTrans, cublas.NoTrans, 2, 2, 2, 1, s12, 2, 4, s12, 2, 4, 0, s12, 2, 4, 4,
		cublas.CUBLAS_COMPUTE_32F)
	if !errors.As(err, &se) || se.Arg != "A" || se.Stride != 4 || se.Count != 4 || se.Need != 16 || se.Len != 12 {
		t.Errorf("strided A: %v (%+v)", err, se)
	}
	err = cublas.GemmStridedBatchedEx(f.h, cublas.NoTrans, cublas.NoTrans, 2, 2, 2, 1, s12, 2, 0, s12, 2, 0, 0, s12, 2, 2, 2,
		cublas.CUBLAS_COMPUTE_32F)
	if !errors.As(err, &se) || se.Arg != "strideC" || se.Value != 2 {
		t.Errorf("overlapping C: %v (%+v)", err, se)
	}
	err = cublas.GemmStridedBatchedEx(f.h, cublas.NoTrans, cublas.NoTrans, 2, 2, 2, 1, s12, 2, 0, s12, 2, 0, 0, s12, 2, 4, 1, 12345)
	if !errors.As(err, &se) || se.Arg != "compute" || se.Value != 12345 {
		t.Errorf("unknown compute type: %v (%+v)", err, se)
	}
	if err := cublas.Axpy(f.h, 7, 1, s12, 1, s6, -1); !errors.As(err, &se) || se.Arg != "y" || se.Need != 7 || se.Len != 6 || se.LD != -1 {
		t.Errorf("axpy y: %v (%+v)", err, se)
	}
}

// A zero Slice where a matrix or vector with elements is needed is
// cuda.ErrNil, as in package cuda, not a shape error.
func TestZeroSlicesAreErrNil(t *testing.T) {
	f := newFixture(t)
	a := upload(t, f.s, make([]float32, 16))
	var z cuda.Slice[float32]
	N := cublas.NoTrans
	for name, call := range map[string]func() error{
		"Gemm A":       func() error { return cublas.Gemm(f.h, N, N, 2, 2, 2, 1, z, 2, a, 2, 0, a, 2) },
		"Gemm C":       func() error { return cublas.Gemm(f.h, N, N, 2, 2, 2, 1, a, 2, a, 2, 0, z, 2) },
		"GemmRowMajor": func() error { return cublas.GemmRowMajor(f.h, N, N, 2, 2, 2, 1, a, 2, z, 2, 0, a, 2) },
		"GemmEx B": func() error {
			return cublas.GemmEx(f.h, N, N, 2, 2, 2, 1, a, 2, z, 2, 0, a, 2, cublas.CUBLAS_COMPUTE_32F)
		},
		"GemmStridedBatched C": func() error { return cublas.GemmStridedBatched(f.h, N, N, 2, 2, 2, 1, a, 2, 4, a, 2, 4, 0, z, 2, 4, 2) },
		"GemmStridedBatchedEx A": func() error {
			return cublas.GemmStridedBatchedEx(f.h, N, N, 2, 2, 2, 1, z, 2, 4, a, 2, 4, 0, a, 2, 4, 2, cublas.CUBLAS_COMPUTE_32F)
		},
		"Axpy y": func() error { return cublas.Axpy(f.h, 2, 1, a, 1, z, 1) },
		"Gemv x": func() error { return cublas.Gemv(f.h, N, 2, 2, 1, a, 2, z, 1, 0, a, 1) },
	} {
		if err := call(); !errors.Is(err, cuda.ErrNil) || errors.Is(err, cublas.ErrShape) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A strided-batched GemmEx with its operands on the stack allocates
// nothing, as Gemm does.
func TestGemmStridedBatchedExAllocatesNothing(t *testing.T) {
	f := newFixture(t)
	a := upload(t, f.s, make([]float32, 4*16*16))
	n := testing.AllocsPerRun(50, func() {
		if err := cublas.GemmStridedBatchedEx(f.h, cublas.NoTrans, cublas.NoTrans, 16, 16, 16, 1, a, 16, 256, a, 16, 256, 0, a, 16, 256, 4,
			cublas.CUBLAS_COMPUTE_32F); err != nil {
			t.Fatal(err)
		}
	})
	testenv.Must(t, f.s.Sync(testenv.Context(t)))
	if n != 0 {
		t.Errorf("%v allocations a GemmStridedBatchedEx", n)
	}
}
