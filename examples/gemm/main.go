// Command gemm multiplies two 4096x4096 float32 matrices on the GPU with
// cuBLAS (package cublas: cublasSgemm_v2, and cublasGemmEx with TF32
// tensor cores), checks 64 elements of each product against the CPU, and
// prints the rate in TFLOP/s.
//
// The timed part is 10 products after one untimed warm-up (which loads
// cuBLAS's kernels). It prints "check: PASSED" or exits with status 1.
package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/examples/internal/sample"
)

const (
	n     = 4096
	reps  = 10
	check = 64 // elements checked on the CPU
)

func main() { sample.Main("gemm", run) }

func run() (err error) {
	devs, err := cuda.Devices()
	if err != nil {
		return err
	}
	if len(devs) == 0 {
		return errors.New("no CUDA device")
	}
	ctx, err := devs[0].Context()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ctx.Close()) }()
	s, err := ctx.NewStream(cuda.NonBlocking())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	h, err := cublas.New(s)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, h.Close()) }()

	r := sample.NewRand()
	a, b := make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i] = r.Float() - 0.5
	}
	for i := range b {
		b[i] = r.Float() - 0.5
	}
	var dev [3]cuda.Slice[float32]
	for i := range dev {
		if dev[i], err = cuda.Alloc[float32](s, n*n); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, dev[i].Free()) }()
	}
	da, db, dc := dev[0], dev[1], dev[2]
	if err := cuda.CopyToDevice(s, da, a); err != nil {
		return err
	}
	if err := cuda.CopyToDevice(s, db, b); err != nil {
		return err
	}

	passed := true
	for _, way := range []struct {
		name string
		tol  float64 // relative to the sum of |a||b| over the dot product
		mul  func() error
	}{
		{"SGEMM", 1e-5, func() error {
			return cublas.Gemm(h, cublas.NoTrans, cublas.NoTrans, n, n, n, 1, da, n, db, n, 0, dc, n)
		}},
		{"TF32 GemmEx", 2e-3, func() error {
			return cublas.GemmEx(h, cublas.NoTrans, cublas.NoTrans, n, n, n, 1, da, n, db, n, 0, dc, n, cublas.CUBLAS_COMPUTE_32F_FAST_TF32)
		}},
	} {
		if err := way.mul(); err != nil { // warm-up
			return err
		}
		if err := s.Sync(context.Background()); err != nil {
			return err
		}
		t0 := time.Now()
		for range reps {
			if err := way.mul(); err != nil {
				return err
			}
		}
		if err := s.Sync(context.Background()); err != nil {
			return err
		}
		elapsed := time.Since(t0)
		c := make([]float32, n*n)
		if err := cuda.CopyToHost(s, c, dc); err != nil {
			return err
		}
		ok := verify(a, b, c, way.tol)
		passed = passed && ok
		tflops := 2 * float64(n) * n * n * reps / elapsed.Seconds() / 1e12
		fmt.Printf("%s %dx%d: %.1f TFLOP/s (%d products in %.2f ms), sample check %v\n", way.name, n, n, tflops, reps, sample.Ms(elapsed), ok)
	}
	if !passed {
		return errors.New("check: FAILED")
	}
	fmt.Println("check: PASSED")
	return nil
}

// verify compares check elements of c (column-major, as cuBLAS wrote it)
// with the CPU's dot products.
func verify(a, b, c []float32, tol float64) bool {
	r := sample.NewRand()
	for range check {
		i, j := int(r.Float()*n), int(r.Float()*n)
		var want, scale float64
		for p := range n {
			x, y := float64(a[i+p*n]), float64(b[p+j*n])
			want += x * y
			scale += math.Abs(x * y)
		}
		if got := float64(c[i+j*n]); math.Abs(got-want) > tol*scale {
			fmt.Printf("C[%d][%d] = %v, want %v\n", i, j, got, want)
			return false
		}
	}
	return true
}
