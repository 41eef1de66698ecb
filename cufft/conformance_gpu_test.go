//go:build gpu

package cufft_test

import (
	"math"
	"math/cmplx"
	"testing"

	"gonum.org/v1/gonum/dsp/fourier"

	"github.com/purecuda/purecuda/cufft"
	"github.com/purecuda/purecuda/internal/testenv"
)

// reference is the n-dimensional transform of x (extents n, slowest
// first) by gonum's FFT along each axis: forward (e^-) or inverse (e^+),
// both unnormalised, as cuFFT's.
func reference(x []complex128, n []int, inverse bool) []complex128 {
	out := append([]complex128(nil), x...)
	stride := 1
	for d := len(n) - 1; d >= 0; d-- {
		fft := fourier.NewCmplxFFT(n[d])
		line := make([]complex128, n[d])
		outer := len(x) / (n[d] * stride)
		for o := range outer {
			for s := range stride {
				base := o*n[d]*stride + s
				for i := range n[d] {
					line[i] = out[base+i*stride]
				}
				if inverse {
					fft.Sequence(line, line)
				} else {
					fft.Coefficients(line, line)
				}
				for i := range n[d] {
					out[base+i*stride] = line[i]
				}
			}
		}
		stride *= n[d]
	}
	return out
}

// maxErr is the largest |got-want| over the largest |want|.
func maxErr(got, want []complex128) float64 {
	var e, m float64
	for i := range want {
		e = max(e, cmplx.Abs(got[i]-want[i]))
		m = max(m, cmplx.Abs(want[i]))
	}
	return e / math.Max(m, 1)
}

// halfOf keeps the n/2+1 first elements of each row of the last dimension.
func halfOf(x []complex128, last int) []complex128 {
	var out []complex128
	for r := 0; r < len(x); r += last {
		out = append(out, x[r:r+last/2+1]...)
	}
	return out
}

// Each cuFFT kind on the GPU against gonum's FFT: batched 1-D C2C and
// Z2Z both ways (a power of two and a size of small primes), 2-D R2C and
// C2R, 3-D D2Z and Z2D.
func TestGPUConformanceAgainstGonum(t *testing.T) {
	f := newFixture(t)
	const tol32, tol64 = 2e-6, 1e-13
	t.Run("C2C 1-D 4096 batch 8", func(t *testing.T) {
		n, batch := 4096, 8
		x := randomComplex(n*batch, 11)
		p := f.plan(t, cufft.CUFFT_C2C, cufft.Shape{N: []int{n}, Batch: batch})
		in, out := upload(t, f.s, to64(x)), alloc[complex64](t, f.s, n*batch)
		for _, dir := range []cufft.Direction{cufft.Forward, cufft.Inverse} {
			testenv.Must(t, p.C2C(in, out, dir))
			got := widen(download(t, f.s, out))
			for b := range batch {
				want := reference(x[b*n:(b+1)*n], []int{n}, dir == cufft.Inverse)
				if e := maxErr(got[b*n:(b+1)*n], want); e > tol32*math.Log2(float64(n)) {
					t.Errorf("%v batch %d: relative error %.3g", dir, b, e)
				}
			}
		}
	})
	t.Run("Z2Z 1-D 1000", func(t *testing.T) {
		n := 1000
		x := randomComplex(n, 12)
		p := f.plan(t, cufft.CUFFT_Z2Z, cufft.Shape{N: []int{n}})
		in, out := upload(t, f.s, x), alloc[complex128](t, f.s, n)
		for _, dir := range []cufft.Direction{cufft.Forward, cufft.Inverse} {
			testenv.Must(t, p.Z2Z(in, out, dir))
			if e := maxErr(download(t, f.s, out), reference(x, []int{n}, dir == cufft.Inverse)); e > tol64 {
				t.Errorf("%v: relative error %.3g", dir, e)
			}
		}
	})
	t.Run("R2C and C2R 2-D 96x128", func(t *testing.T) {
		n := []int{96, 128}
		total := 96 * 128
		xr := realParts(randomComplex(total, 13))
		in32, x := make([]float32, total), make([]complex128, total)
		for i, v := range xr {
			in32[i] = float32(v)
			x[i] = complex(float64(float32(v)), 0)
		}
		r2c := f.plan(t, cufft.CUFFT_R2C, cufft.Shape{N: n})
		c2r := f.plan(t, cufft.CUFFT_C2R, cufft.Shape{N: n})
		half := 96 * (128/2 + 1)
		in, spec, back := upload(t, f.s, in32), alloc[complex64](t, f.s, half), alloc[float32](t, f.s, total)
		testenv.Must(t, r2c.R2C(in, spec))
		want := reference(x, n, false)
		if e := maxErr(widen(download(t, f.s, spec)), halfOf(want, 128)); e > tol32*14 {
			t.Errorf("R2C: relative error %.3g", e)
		}
		testenv.Must(t, c2r.C2R(spec, back))
		got := download(t, f.s, back)
		gotC, wantC := make([]complex128, total), make([]complex128, total)
		for i := range got {
			gotC[i], wantC[i] = complex(float64(got[i]), 0), x[i]*complex(float64(total), 0)
		}
		if e := maxErr(gotC, wantC); e > tol32*28 {
			t.Errorf("C2R(R2C(x)): relative error %.3g", e)
		}
	})
	t.Run("D2Z and Z2D 3-D 24x20x30", func(t *testing.T) {
		n := []int{24, 20, 30}
		total := 24 * 20 * 30
		xr := realParts(randomComplex(total, 14))
		x := make([]complex128, total)
		for i, v := range xr {
			x[i] = complex(v, 0)
		}
		d2z := f.plan(t, cufft.CUFFT_D2Z, cufft.Shape{N: n})
		z2d := f.plan(t, cufft.CUFFT_Z2D, cufft.Shape{N: n})
		half := 24 * 20 * (30/2 + 1)
		in, spec, back := upload(t, f.s, xr), alloc[complex128](t, f.s, half), alloc[float64](t, f.s, total)
		testenv.Must(t, d2z.D2Z(in, spec))
		if e := maxErr(download(t, f.s, spec), halfOf(reference(x, n, false), 30)); e > tol64 {
			t.Errorf("D2Z: relative error %.3g", e)
		}
		testenv.Must(t, z2d.Z2D(spec, back))
		got := download(t, f.s, back)
		gotC, wantC := make([]complex128, total), make([]complex128, total)
		for i := range got {
			gotC[i], wantC[i] = complex(got[i], 0), x[i]*complex(float64(total), 0)
		}
		if e := maxErr(gotC, wantC); e > tol64 {
			t.Errorf("Z2D(D2Z(x)): relative error %.3g", e)
		}
	})
	t.Run("C2C 3-D 16x32x8 in place", func(t *testing.T) {
		n := []int{16, 32, 8}
		x := randomComplex(16*32*8, 15)
		p := f.plan(t, cufft.CUFFT_C2C, cufft.Shape{N: n})
		buf := upload(t, f.s, to64(x))
		testenv.Must(t, p.C2C(buf, buf, cufft.Forward))
		if e := maxErr(widen(download(t, f.s, buf)), reference(x, n, false)); e > tol32*12 {
			t.Errorf("relative error %.3g", e)
		}
	})
}

func widen(x []complex64) []complex128 {
	out := make([]complex128, len(x))
	for i, v := range x {
		out[i] = complex128(v)
	}
	return out
}
