package cublaslt_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cublaslt"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

type fixture struct {
	ctx *cuda.Context
	s   *cuda.Stream
	lt  *cublaslt.Lt
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "ctx.Close", ctx.Close) })
	s, err := ctx.NewStream(cuda.NonBlocking())
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "s.Close", s.Close) })
	lt, err := cublaslt.New(s)
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := testenv.BoundedErr(t, "lt.Close", lt.Close); err != nil && !errors.Is(err, cuda.ErrClosed) {
			t.Error(err)
		}
	})
	return &fixture{ctx, s, lt}
}

func upload[T any](t testing.TB, s *cuda.Stream, v []T) cuda.Slice[T] {
	t.Helper()
	x, err := cuda.Alloc[T](s, len(v))
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := testenv.BoundedErr(t, "x.Free", x.Free); err != nil && !errors.Is(err, cuda.ErrFreed) {
			t.Error(err)
		}
	})
	testenv.Must(t, cuda.CopyToDevice(s, x, v))
	return x
}

func download[T any](t testing.TB, s *cuda.Stream, x cuda.Slice[T]) []T {
	t.Helper()
	out := make([]T, x.Len())
	testenv.Must(t, cuda.CopyToHost(s, out, x))
	return out
}

func randoms(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 2))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(2*r.Float64() - 1)
	}
	return v
}

func gelu(x float64) float64 { return 0.5 * x * (1 + math.Tanh(0.7978845608028654*(x+0.044715*x*x*x))) }

// ref is the epilogue's result on the host (column-major, A not
// transposed, B transposed).
func ref(op cublaslt.Op, alpha float64, a, b []float32, beta float64, c, bias []float32) []float32 {
	out := make([]float32, op.M*op.N)
	for j := range op.N {
		for i := range op.M {
			s := 0.0
			for p := range op.K {
				s += float64(a[i+p*op.M]) * float64(b[j+p*op.N])
			}
			v := alpha*s + beta*float64(c[i+j*op.M])
			if bias != nil {
				v += float64(bias[i])
			}
			switch op.Epilogue {
			case cublaslt.CUBLASLT_EPILOGUE_RELU, cublaslt.CUBLASLT_EPILOGUE_RELU_BIAS:
				v = math.Max(v, 0)
			case cublaslt.CUBLASLT_EPILOGUE_GELU, cublaslt.CUBLASLT_EPILOGUE_GELU_BIAS:
				v = gelu(v)
			}
			out[i+j*op.M] = float32(v)
		}
	}
	return out
}

// Matmul with each epilogue matches the host; the heuristic is asked once
// per shape and epilogue.
func TestMatmulEpiloguesMatchTheCPU(t *testing.T) {
	f := newFixture(t)
	const m, n, k = 8, 6, 5
	ha, hb, hc, hbias := randoms(m*k, 1), randoms(n*k, 2), randoms(m*n, 3), randoms(m, 4)
	a, b, c, bias := upload(t, f.s, ha), upload(t, f.s, hb), upload(t, f.s, hc), upload(t, f.s, hbias)
	for _, e := range []cublaslt.Epilogue{cublaslt.CUBLASLT_EPILOGUE_DEFAULT, cublaslt.CUBLASLT_EPILOGUE_RELU,
		cublaslt.CUBLASLT_EPILOGUE_GELU, cublaslt.CUBLASLT_EPILOGUE_BIAS, cublaslt.CUBLASLT_EPILOGUE_RELU_BIAS,
		cublaslt.CUBLASLT_EPILOGUE_GELU_BIAS} {
		t.Run(e.String(), func(t *testing.T) {
			op := cublaslt.Op{TransB: cublas.Trans, M: m, N: n, K: k, Epilogue: e}
			d := upload(t, f.s, make([]float32, m*n))
			var hb2 []float32
			if e&cublaslt.CUBLASLT_EPILOGUE_BIAS != 0 {
				hb2 = hbias
			}
			testenv.Must(t, cublaslt.Matmul(f.lt, op, 1.5, a, b, 0.5, c, d, bias))
			got, want := download(t, f.s, d), ref(op, 1.5, ha, hb, 0.5, hc, hb2)
			// GELU is taken as its tanh approximation; a library may
			// compute it a little differently (within 2e-3 of it).
			tol := 1e-4
			if e == cublaslt.CUBLASLT_EPILOGUE_GELU || e == cublaslt.CUBLASLT_EPILOGUE_GELU_BIAS {
				tol = 2e-3
			}
			for i := range want {
				if math.Abs(float64(got[i]-want[i])) > tol {
					t.Fatalf("D[%d] = %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
	if p := f.lt.Plans(); p != 6 {
		t.Errorf("%d plans, want one per epilogue (6)", p)
	}
}

// A second Matmul of the same shape reuses the plan; another shape makes
// one more.
func TestMatmulCachesItsPlanPerShape(t *testing.T) {
	f := newFixture(t)
	a := upload(t, f.s, randoms(64, 5))
	d := upload(t, f.s, make([]float32, 64))
	op := cublaslt.Op{M: 8, N: 8, K: 8}
	testenv.Must(t, cublaslt.Matmul(f.lt, op, 1, a, a, 0, cuda.Slice[float32]{}, d, cuda.Slice[float32]{}))
	before := heuristics(t)
	for range 3 {
		testenv.Must(t, cublaslt.Matmul(f.lt, op, 1, a, a, 0, cuda.Slice[float32]{}, d, cuda.Slice[float32]{}))
	}
	if n := heuristics(t); n != before {
		t.Errorf("%d heuristic calls for a known shape", n-before)
	}
	op.N = 4
	testenv.Must(t, cublaslt.Matmul(f.lt, op, 1, a, a, 0, cuda.Slice[float32]{}, d, cuda.Slice[float32]{}))
	if f.lt.Plans() != 2 {
		t.Errorf("%d plans after two shapes", f.lt.Plans())
	}
	n := testenv.AllocsPerRunMin(20, func() {
		if err := cublaslt.Matmul(f.lt, op, 1, a, a, 0, cuda.Slice[float32]{}, d, cuda.Slice[float32]{}); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("%v allocations a Matmul with a known plan", n)
	}
}

// Calls of two shapes in turns each use their own plan (the Lt keeps the
// last plan it found for a lock-free lookup): results right, no new plan,
// no new heuristic.
func TestMatmulShapesInTurnsUseTheirOwnPlans(t *testing.T) {
	f := newFixture(t)
	const m, k = 8, 5
	ha, hb, hc := randoms(m*k, 1), randoms(8*k, 2), randoms(m*8, 3)
	a, b, c := upload(t, f.s, ha), upload(t, f.s, hb), upload(t, f.s, hc)
	ops := []cublaslt.Op{{TransB: cublas.Trans, M: m, N: 8, K: k}, {TransB: cublas.Trans, M: m, N: 6, K: k}}
	d := upload(t, f.s, make([]float32, m*8))
	for _, op := range ops {
		testenv.Must(t, cublaslt.Matmul(f.lt, op, 1, a, b, 1, c, d, cuda.Slice[float32]{}))
	}
	before := heuristics(t)
	for i := range 6 {
		op := ops[i%2]
		cc, err := c.Slice(0, m*op.N)
		testenv.Must(t, err)
		dd, err := d.Slice(0, m*op.N)
		testenv.Must(t, err)
		testenv.Must(t, cublaslt.Matmul(f.lt, op, 1, a, b, 1, cc, dd, cuda.Slice[float32]{}))
		got, want := download(t, f.s, dd), ref(op, 1, ha, hb, 1, hc, nil)
		for j := range want {
			if math.Abs(float64(got[j]-want[j])) > 1e-4 {
				t.Fatalf("call %d (N %d): D[%d] = %v, want %v", i, op.N, j, got[j], want[j])
			}
		}
	}
	if n := heuristics(t); n != before {
		t.Errorf("%d heuristic calls for known shapes", n-before)
	}
	if p := f.lt.Plans(); p != 2 {
		t.Errorf("%d plans, want 2", p)
	}
}

// Bad shapes are ErrShape naming the argument.
func TestMatmulShapeErrors(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, make([]float32, 16))
	short := upload(t, f.s, make([]float32, 3))
	z := cuda.Slice[float32]{}
	for _, c := range []struct {
		name, want string
		op         cublaslt.Op
		c, bias    cuda.Slice[float32]
		beta       float64
	}{
		{"zero M", "M, N and K", cublaslt.Op{M: 0, N: 2, K: 2}, z, z, 0},
		{"lda", "ldA is 1", cublaslt.Op{M: 2, N: 2, K: 2, LDA: 1}, z, z, 0},
		{"A short", "A: a 4x5", cublaslt.Op{M: 4, N: 1, K: 5}, z, z, 0},
		{"C needed", "C: a 2x2", cublaslt.Op{M: 2, N: 2, K: 2}, z, z, 1},
		{"C short", "C: a 2x2", cublaslt.Op{M: 2, N: 2, K: 2}, short, z, 1},
		{"bias", "bias has 3 elements", cublaslt.Op{M: 4, N: 2, K: 2, Epilogue: cublaslt.CUBLASLT_EPILOGUE_BIAS}, z, short, 0},
		{"epilogue", "epilogue", cublaslt.Op{M: 2, N: 2, K: 2, Epilogue: 12345}, z, z, 0},
		{"transA", "TransA", cublaslt.Op{TransA: 9, M: 2, N: 2, K: 2}, z, z, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := cublaslt.Matmul(f.lt, c.op, 1, x, x, c.beta, c.c, x, c.bias)
			if !errors.Is(err, cublas.ErrShape) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want ErrShape naming %q", err, c.want)
			}
		})
	}
}

func TestMatmulAfterCloseIsClosed(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, make([]float32, 4))
	testenv.MustBounded(t, "f.lt.Close", f.lt.Close)
	if err := testenv.BoundedErr(t, "cublaslt.Matmul", func() error { return cublaslt.Matmul(f.lt, cublaslt.Op{M: 2, N: 2, K: 2}, 1, x, x, 0, x, x, x) }); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Matmul after Close: %v", err)
	}
	if err := testenv.BoundedErr(t, "f.lt.Close", f.lt.Close); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}
