package cufft_test

import (
	"errors"
	"fmt"
	"strings"
	gosync "sync"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/cufft"
	"github.com/purecuda/purecuda/internal/testenv"
)

// Each kind, out of place, against the reference DFT: 1-D batched C2C and
// Z2Z forward and inverse, 2-D R2C and C2R, 3-D D2Z and Z2D.
func TestEveryKindMatchesTheDFT(t *testing.T) {
	f := newFixture(t)
	t.Run("C2C 1-D batch 3", func(t *testing.T) {
		const n, batch = 16, 3
		x := randomComplex(n*batch, 1)
		p := f.plan(t, cufft.CUFFT_C2C, cufft.Shape{N: []int{n}, Batch: batch})
		in, out := upload(t, f.s, to64(x)), alloc[complex64](t, f.s, n*batch)
		for _, dir := range []cufft.Direction{cufft.Forward, cufft.Inverse} {
			testenv.Must(t, p.C2C(in, out, dir))
			got := download(t, f.s, out)
			for b := range batch {
				want := dft(x[b*n:(b+1)*n], []int{n}, float64(dir))
				for i := range n {
					if !closeTo(complex128(got[b*n+i]), want[i], 1e-4) {
						t.Fatalf("%v: batch %d [%d] = %v, want %v", dir, b, i, got[b*n+i], want[i])
					}
				}
			}
		}
	})
	t.Run("Z2Z 1-D", func(t *testing.T) {
		const n = 12
		x := randomComplex(n, 2)
		p := f.plan(t, cufft.CUFFT_Z2Z, cufft.Shape{N: []int{n}})
		in, out := upload(t, f.s, x), alloc[complex128](t, f.s, n)
		testenv.Must(t, p.Z2Z(in, out, cufft.Inverse))
		want := dft(x, []int{n}, 1)
		for i, v := range download(t, f.s, out) {
			if !closeTo(v, want[i], 1e-12) {
				t.Fatalf("[%d] = %v, want %v", i, v, want[i])
			}
		}
	})
	t.Run("R2C and C2R 2-D", func(t *testing.T) {
		const nx, ny = 6, 8
		x := randomComplex(nx*ny, 3)
		xr := realParts(x)
		in32 := make([]float32, len(xr))
		for i, v := range xr {
			in32[i] = float32(v)
			x[i] = complex(v, 0)
		}
		r2c := f.plan(t, cufft.CUFFT_R2C, cufft.Shape{N: []int{nx, ny}})
		c2r := f.plan(t, cufft.CUFFT_C2R, cufft.Shape{N: []int{nx, ny}})
		in, spec, back := upload(t, f.s, in32), alloc[complex64](t, f.s, nx*(ny/2+1)), alloc[float32](t, f.s, nx*ny)
		testenv.Must(t, r2c.R2C(in, spec))
		want := dft(x, []int{nx, ny}, -1)
		got := download(t, f.s, spec)
		for i := range nx {
			for j := range ny/2 + 1 {
				if g, w := complex128(got[i*(ny/2+1)+j]), want[i*ny+j]; !closeTo(g, w, 1e-4) {
					t.Fatalf("R2C [%d,%d] = %v, want %v", i, j, g, w)
				}
			}
		}
		testenv.Must(t, c2r.C2R(spec, back))
		for i, v := range download(t, f.s, back) {
			if w := xr[i] * nx * ny; !closeTo(complex(float64(v), 0), complex(w, 0), 1e-4) {
				t.Fatalf("C2R(R2C(x))[%d] = %v, want %v (x times %d)", i, v, w, nx*ny)
			}
		}
	})
	t.Run("D2Z and Z2D 3-D", func(t *testing.T) {
		n := []int{3, 4, 5}
		total := 60
		x := randomComplex(total, 4)
		xr := realParts(x)
		for i, v := range xr {
			x[i] = complex(v, 0)
		}
		half := 3 * 4 * (5/2 + 1)
		d2z := f.plan(t, cufft.CUFFT_D2Z, cufft.Shape{N: n})
		z2d := f.plan(t, cufft.CUFFT_Z2D, cufft.Shape{N: n})
		in, spec, back := upload(t, f.s, xr), alloc[complex128](t, f.s, half), alloc[float64](t, f.s, total)
		testenv.Must(t, d2z.D2Z(in, spec))
		want := dft(x, n, -1)
		got := download(t, f.s, spec)
		for i := range 12 {
			for k := range 3 {
				if g, w := got[i*3+k], want[i*5+k]; !closeTo(g, w, 1e-12) {
					t.Fatalf("D2Z [%d,%d] = %v, want %v", i, k, g, w)
				}
			}
		}
		testenv.Must(t, z2d.Z2D(spec, back))
		for i, v := range download(t, f.s, back) {
			if !closeTo(complex(v, 0), complex(xr[i]*float64(total), 0), 1e-12) {
				t.Fatalf("Z2D(D2Z(x))[%d] = %v, want %v", i, v, xr[i]*float64(total))
			}
		}
	})
}

// The advanced layout: two 1-D transforms of 8 interleaved (stride 2,
// distance 1) into rows of 10 (stride 1, distance 10).
func TestAdvancedLayout(t *testing.T) {
	f := newFixture(t)
	const n = 8
	x := randomComplex(2*n, 5)
	p := f.plan(t, cufft.CUFFT_C2C, cufft.Shape{N: []int{n}, Batch: 2,
		In:  cufft.Layout{Embed: []int{n}, Stride: 2, Dist: 1},
		Out: cufft.Layout{Embed: []int{n}, Stride: 1, Dist: 10}})
	in, out := upload(t, f.s, to64(x)), alloc[complex64](t, f.s, 18)
	testenv.Must(t, p.C2C(in, out, cufft.Forward))
	got := download(t, f.s, out)
	for b := range 2 {
		col := make([]complex128, n)
		for i := range n {
			col[i] = x[2*i+b]
		}
		want := dft(col, []int{n}, -1)
		for i := range n {
			if !closeTo(complex128(got[10*b+i]), want[i], 1e-4) {
				t.Fatalf("batch %d [%d] = %v, want %v", b, i, got[10*b+i], want[i])
			}
		}
	}
	if err := p.C2C(in, alloc[complex64](t, f.s, 17), cufft.Forward); !errors.Is(err, cufft.ErrShape) {
		t.Fatalf("out of 17 for a layout that writes 18: %v", err)
	}
}

// In place: C2C on one Slice, and R2C/C2R on one complex Slice whose rows
// hold 2*(n/2+1) reals.
func TestInPlace(t *testing.T) {
	f := newFixture(t)
	const n = 10
	x := randomComplex(n, 6)
	p := f.plan(t, cufft.CUFFT_C2C, cufft.Shape{N: []int{n}})
	buf := upload(t, f.s, to64(x))
	testenv.Must(t, p.C2C(buf, buf, cufft.Forward))
	want := dft(x, []int{n}, -1)
	for i, v := range download(t, f.s, buf) {
		if !closeTo(complex128(v), want[i], 1e-4) {
			t.Fatalf("C2C in place [%d] = %v, want %v", i, v, want[i])
		}
	}

	const rows, cols = 2, 6 // rows of 6 reals, padded to 8 (4 complex)
	xr := realParts(randomComplex(rows*cols, 7))
	packed := make([]complex64, rows*(cols/2+1))
	reals := make([]complex128, rows*cols)
	for r := range rows {
		for c := range cols {
			v := xr[r*cols+c]
			reals[r*cols+c] = complex(v, 0)
			i := r*(cols/2+1)*2 + c // the real index in the padded row
			if i%2 == 0 {
				packed[i/2] = complex(float32(v), imag(packed[i/2]))
			} else {
				packed[i/2] = complex(real(packed[i/2]), float32(v))
			}
		}
	}
	r2c := f.plan(t, cufft.CUFFT_R2C, cufft.Shape{N: []int{rows, cols}})
	c2r := f.plan(t, cufft.CUFFT_C2R, cufft.Shape{N: []int{rows, cols}})
	y := upload(t, f.s, packed)
	testenv.Must(t, r2c.R2CInPlace(y))
	spec := dft(reals, []int{rows, cols}, -1)
	got := download(t, f.s, y)
	for r := range rows {
		for c := range cols/2 + 1 {
			if g, w := complex128(got[r*(cols/2+1)+c]), spec[r*cols+c]; !closeTo(g, w, 1e-4) {
				t.Fatalf("R2C in place [%d,%d] = %v, want %v", r, c, g, w)
			}
		}
	}
	testenv.Must(t, c2r.C2RInPlace(y))
	got = download(t, f.s, y)
	for r := range rows {
		for c := range cols {
			i := r*(cols/2+1)*2 + c
			v := float64(real(got[i/2]))
			if i%2 == 1 {
				v = float64(imag(got[i/2]))
			}
			if w := xr[r*cols+c] * rows * cols; !closeTo(complex(v, 0), complex(w, 0), 1e-4) {
				t.Fatalf("C2R in place [%d,%d] = %v, want %v", r, c, v, w)
			}
		}
	}
	if err := r2c.R2CInPlace(alloc[complex64](t, f.s, 7)); !errors.Is(err, cufft.ErrShape) {
		t.Fatalf("R2C in place on 7 complex for 2x6: %v", err)
	}
}

// Every length is checked against the plan before any call, and the
// error names the argument.
func TestLengthsAndKindsCheckedFirst(t *testing.T) {
	f := newFixture(t)
	r2c := f.plan(t, cufft.CUFFT_R2C, cufft.Shape{N: []int{16}, Batch: 2})
	in := alloc[float32](t, f.s, 32)
	for _, c := range []struct {
		name, arg string
		err       error
		want      error
	}{
		{"R2C out of 17 (2 rows of 9 needed)", "out has 17", r2c.R2C(in, alloc[complex64](t, f.s, 17)), cufft.ErrShape},
		{"R2C in of 31", "in has 31", r2c.R2C(alloc[float32](t, f.s, 31), alloc[complex64](t, f.s, 18)), cufft.ErrShape},
		{"C2C on an R2C plan", "C2C on a CUFFT_R2C plan", r2c.C2C(alloc[complex64](t, f.s, 32), alloc[complex64](t, f.s, 32), cufft.Forward), cufft.CUFFT_INVALID_TYPE},
		{"a direction of 0", "direction 0", r2c.C2C(alloc[complex64](t, f.s, 32), alloc[complex64](t, f.s, 32), 0), cufft.CUFFT_INVALID_VALUE},
	} {
		if !errors.Is(c.err, c.want) || !containsText(c.err, c.arg) {
			t.Errorf("%s: %v, want %v naming %q", c.name, c.err, c.want, c.arg)
		}
	}
	for _, c := range []struct {
		name  string
		kind  cufft.Type
		shape cufft.Shape
	}{
		{"4 dimensions", cufft.CUFFT_C2C, cufft.Shape{N: []int{2, 2, 2, 2}}},
		{"a size of 0", cufft.CUFFT_C2C, cufft.Shape{N: []int{4, 0}}},
		{"one embed", cufft.CUFFT_C2C, cufft.Shape{N: []int{4}, In: cufft.Layout{Embed: []int{4}, Stride: 1, Dist: 4}}},
		{"a stride without embed", cufft.CUFFT_C2C, cufft.Shape{N: []int{4}, In: cufft.Layout{Stride: 2}}},
		{"an embed below the size", cufft.CUFFT_C2C, cufft.Shape{N: []int{4, 4},
			In: cufft.Layout{Embed: []int{4, 3}, Stride: 1, Dist: 16}, Out: cufft.Layout{Embed: []int{4, 4}, Stride: 1, Dist: 16}}},
	} {
		if _, err := cufft.NewPlan(f.s, c.kind, c.shape); !errors.Is(err, cufft.ErrShape) {
			t.Errorf("NewPlan with %s: %v, want ErrShape", c.name, err)
		}
	}
	if _, err := cufft.NewPlan(f.s, cufft.Type(7), cufft.Shape{N: []int{4}}); !errors.Is(err, cufft.CUFFT_INVALID_TYPE) {
		t.Errorf("NewPlan of kind 7: %v", err)
	}
}

func containsText(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

// An execution captured into a graph runs at each launch: four forward
// transforms of length n, in place, give n² times the input (F⁴ = n²).
func TestExecInsideCaptureLaunchedManyTimes(t *testing.T) {
	f := newFixture(t)
	const n = 8
	x := randomComplex(n, 8)
	p := f.plan(t, cufft.CUFFT_Z2Z, cufft.Shape{N: []int{n}})
	buf := upload(t, f.s, x)
	testenv.Must(t, f.s.Sync(testenv.Context(t)))
	g, err := f.s.Capture(func(s *cuda.Stream) error { return p.Z2Z(buf, buf, cufft.Forward) })
	testenv.Must(t, err)
	defer func() { testenv.Must(t, g.Destroy()) }()
	e, err := g.Instantiate()
	testenv.Must(t, err)
	defer func() { testenv.Must(t, e.Destroy()) }()
	for range 4 {
		testenv.Must(t, f.s.LaunchGraph(e))
	}
	for i, v := range download(t, f.s, buf) {
		if !closeTo(v, x[i]*n*n, 1e-10) {
			t.Fatalf("[%d] after 4 launches = %v, want %v", i, v, x[i]*n*n)
		}
	}
}

// Goroutines share a plan (its executions take turns) and run plans of
// their own on their own streams; each gets its own right answer.
func TestGoroutines(t *testing.T) {
	f := newFixture(t)
	const n, workers = 8, 6
	shared := f.plan(t, cufft.CUFFT_C2C, cufft.Shape{N: []int{n}})
	var wg gosync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		s, err := f.ctx.NewStream(cuda.NonBlocking())
		testenv.Must(t, err)
		t.Cleanup(func() { testenv.Must(t, s.Close()) })
		p := shared
		if w%2 == 1 {
			p, err = cufft.NewPlan(s, cufft.CUFFT_C2C, cufft.Shape{N: []int{n}})
			testenv.Must(t, err)
			t.Cleanup(func() { testenv.Must(t, p.Close()) })
		}
		ps := s
		if w%2 == 0 {
			ps = f.s
		}
		x := randomComplex(n, uint64(10+w))
		in, out := upload(t, ps, to64(x)), alloc[complex64](t, ps, n)
		testenv.Must(t, ps.Sync(testenv.Context(t)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if err := p.C2C(in, out, cufft.Forward); err != nil {
					errs <- err
					return
				}
			}
			got := make([]complex64, n)
			if err := cuda.CopyToHost(ps, got, out); err != nil {
				errs <- err
				return
			}
			want := dft(x, []int{n}, -1)
			for i := range n {
				if !closeTo(complex128(got[i]), want[i], 1e-4) {
					errs <- fmt.Errorf("worker %d: [%d] = %v, want %v", w, i, got[i], want[i])
					return
				}
			}
		}()
	}
	testenv.Recv(t, testenv.Go(wg.Wait), "the workers")
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// After Close every use is an error matching cuda.ErrClosed.
func TestUseAfterClose(t *testing.T) {
	f := newFixture(t)
	p, err := cufft.NewPlan(f.s, cufft.CUFFT_C2C, cufft.Shape{N: []int{4}})
	testenv.Must(t, err)
	testenv.Must(t, p.Close())
	x := alloc[complex64](t, f.s, 4)
	if err := p.C2C(x, x, cufft.Forward); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("C2C after Close: %v", err)
	}
	if err := p.Close(); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("a second Close: %v", err)
	}
	var nilPlan *cufft.Plan
	if err := nilPlan.C2C(x, x, cufft.Forward); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("C2C on a nil Plan: %v", err)
	}
}

// An execution allocates nothing: its checks, its operands and the call.
func TestExecAllocatesNothing(t *testing.T) {
	f := newFixture(t)
	p := f.plan(t, cufft.CUFFT_R2C, cufft.Shape{N: []int{4, 8}})
	in, out := alloc[float32](t, f.s, 32), alloc[complex64](t, f.s, 20)
	testenv.Must(t, p.R2C(in, out))
	var err error
	if n := testing.AllocsPerRun(50, func() { err = p.R2C(in, out) }); n != 0 {
		t.Errorf("R2C allocates %v times", n)
	}
	testenv.Must(t, err)
	testenv.Must(t, f.s.Sync(testenv.Context(t)))
}

// SetStream moves the plan's executions to another stream, whose work
// then holds the result.
func TestSetStream(t *testing.T) {
	f := newFixture(t)
	const n = 8
	x := randomComplex(n, 21)
	p := f.plan(t, cufft.CUFFT_C2C, cufft.Shape{N: []int{n}})
	other, err := f.ctx.NewStream(cuda.NonBlocking())
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, other.Close()) })
	testenv.Must(t, p.SetStream(other))
	if p.Stream() != other {
		t.Fatalf("Stream after SetStream is not the new stream")
	}
	in, out := upload(t, other, to64(x)), alloc[complex64](t, other, n)
	testenv.Must(t, p.C2C(in, out, cufft.Forward))
	want := dft(x, []int{n}, -1)
	for i, v := range download(t, other, out) {
		if !closeTo(complex128(v), want[i], 1e-4) {
			t.Fatalf("[%d] = %v, want %v", i, v, want[i])
		}
	}
}
