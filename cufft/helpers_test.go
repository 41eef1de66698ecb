package cufft_test

import (
	"errors"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/cufft"
	"github.com/purecuda/purecuda/internal/testenv"
)

type fixture struct {
	ctx *cuda.Context
	s   *cuda.Stream
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, ctx.Close()) })
	s, err := ctx.NewStream(cuda.NonBlocking())
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("closing a stream: %v", err)
		}
	})
	return &fixture{ctx: ctx, s: s}
}

func (f *fixture) plan(t testing.TB, kind cufft.Type, shape cufft.Shape) *cufft.Plan {
	t.Helper()
	p, err := cufft.NewPlan(f.s, kind, shape)
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := p.Close(); err != nil && !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("closing a plan: %v", err)
		}
	})
	return p
}

func alloc[T any](t testing.TB, s *cuda.Stream, n int) cuda.Slice[T] {
	t.Helper()
	x, err := cuda.Alloc[T](s, n)
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := x.Free(); err != nil && !errors.Is(err, cuda.ErrFreed) {
			t.Errorf("freeing: %v", err)
		}
	})
	return x
}

func upload[T any](t testing.TB, s *cuda.Stream, vals []T) cuda.Slice[T] {
	t.Helper()
	x := alloc[T](t, s, len(vals))
	testenv.Must(t, cuda.CopyToDevice(s, x, vals))
	return x
}

func download[T any](t testing.TB, s *cuda.Stream, x cuda.Slice[T]) []T {
	t.Helper()
	out := make([]T, x.Len())
	testenv.Must(t, cuda.CopyToHost(s, out, x))
	return out
}

// dft is the d-dimensional discrete Fourier transform of x (extents n,
// slowest first) with the exponent's sign, in complex128: the reference
// the transforms are checked against.
func dft(x []complex128, n []int, sign float64) []complex128 {
	total := len(x)
	out := make([]complex128, total)
	idx := func(k int) []int {
		v := make([]int, len(n))
		for d := len(n) - 1; d >= 0; d-- {
			v[d] = k % n[d]
			k /= n[d]
		}
		return v
	}
	for k := range total {
		kx := idx(k)
		var s complex128
		for j := range total {
			jx := idx(j)
			ph := 0.0
			for d := range n {
				ph += float64(kx[d]*jx[d]%n[d]) / float64(n[d])
			}
			s += x[j] * cmplx.Exp(complex(0, sign*2*math.Pi*ph))
		}
		out[k] = s
	}
	return out
}

func randomComplex(n int, seed uint64) []complex128 {
	r := rand.New(rand.NewPCG(seed, 2))
	v := make([]complex128, n)
	for i := range v {
		v[i] = complex(r.Float64()*2-1, r.Float64()*2-1)
	}
	return v
}

func closeTo(got, want complex128, tol float64) bool {
	return cmplx.Abs(got-want) <= tol*(1+cmplx.Abs(want))
}

func to64(x []complex128) []complex64 {
	out := make([]complex64, len(x))
	for i, v := range x {
		out[i] = complex64(v)
	}
	return out
}

func realParts(x []complex128) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = real(v)
	}
	return out
}
