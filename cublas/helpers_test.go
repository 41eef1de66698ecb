package cublas_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// fixture is a context, a stream and a handle on it, closed when the test
// ends.
type fixture struct {
	ctx *cuda.Context
	s   *cuda.Stream
	h   *cublas.BLAS
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "ctx.Close", ctx.Close) })
	s := newStream(t, ctx)
	h, err := cublas.New(s)
	testenv.Must(t, err)
	t.Cleanup(func() { closeBLAS(t, h) })
	return &fixture{ctx: ctx, s: s, h: h}
}

func newStream(t testing.TB, ctx *cuda.Context) *cuda.Stream {
	t.Helper()
	s, err := ctx.NewStream(cuda.NonBlocking())
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := testenv.BoundedErr(t, "s.Close", s.Close); err != nil && !isClosed(err) {
			t.Errorf("closing a stream: %v", err)
		}
	})
	return s
}

func closeBLAS(t testing.TB, h *cublas.BLAS) {
	t.Helper()
	if err := testenv.BoundedErr(t, "h.Close", h.Close); err != nil && !isClosed(err) {
		t.Errorf("closing a handle: %v", err)
	}
}

// upload allocates a Slice holding vals, freed when the test ends.
func upload[T any](t testing.TB, s *cuda.Stream, vals []T) cuda.Slice[T] {
	t.Helper()
	x, err := cuda.Alloc[T](s, len(vals))
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := testenv.BoundedErr(t, "x.Free", x.Free); err != nil && !isFreed(err) {
			t.Errorf("freeing: %v", err)
		}
	})
	testenv.Must(t, cuda.CopyToDevice(s, x, vals))
	return x
}

// download copies x to the host (the copy waits for the stream).
func download[T any](t testing.TB, s *cuda.Stream, x cuda.Slice[T]) []T {
	t.Helper()
	out := make([]T, x.Len())
	testenv.Must(t, cuda.CopyToHost(s, out, x))
	return out
}

// randoms are n numbers in [-1, 1) from a fixed seed.
func randoms[T cublas.Float](n int, seed uint64) []T {
	r := rand.New(rand.NewPCG(seed, 1))
	v := make([]T, n)
	for i := range v {
		v[i] = T(2*r.Float64() - 1)
	}
	return v
}

// refGemm is C = alpha*op(A)*op(B) + beta*C on the host, column-major, in
// float64.
func refGemm[T cublas.Float](ta, tb cublas.Operation, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) []T {
	out := append([]T(nil), c...)
	at := func(x []T, op cublas.Operation, i, j, ld int) float64 {
		if op == cublas.NoTrans {
			return float64(x[i+j*ld])
		}
		return float64(x[j+i*ld])
	}
	for j := range n {
		for i := range m {
			s := 0.0
			for p := range k {
				s += at(a, ta, i, p, lda) * at(b, tb, p, j, ldb)
			}
			out[i+j*ldc] = T(float64(alpha)*s + float64(beta)*float64(c[i+j*ldc]))
		}
	}
	return out
}

// close says whether got is within tol (relative to the largest |want|)
// of want everywhere, and the first index that is not.
func within[T cublas.Float](got, want []T, tol float64) (int, bool) {
	scale := 1e-30
	for _, w := range want {
		scale = math.Max(scale, math.Abs(float64(w)))
	}
	for i := range want {
		if math.Abs(float64(got[i])-float64(want[i])) > tol*scale {
			return i, false
		}
	}
	return 0, true
}
