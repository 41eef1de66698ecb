// Command vectoradd adds two vectors on the GPU, the first of NVIDIA's
// classic samples, written with package cuda: 50,000 random floats each,
// one thread an element in blocks of 256 (196 blocks). It copies both
// vectors from ordinary (pageable) Go slices to the device, launches the
// kernel, copies the sum back and checks every element against the CPU's
// sum (to within 1e-5).
//
// The timed part is the second of two identical passes (copy in, launch,
// copy out, wait), so that the first pays for loading the module lazily;
// baseline.c times the same in C. It prints "check: PASSED" or exits with
// status 1.
package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/examples/internal/sample"
)

//go:embed kernels.ptx
var ptx []byte

const (
	n       = 50000
	threads = 256
	blocks  = (n + threads - 1) / threads
)

func main() { sample.Main("vectoradd", run) }

func run() (err error) {
	env, err := sample.Open(ptx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Close()) }()
	ctx, mod := env.Ctx, env.Mod
	add, err := mod.Func("vec_add")
	if err != nil {
		return err
	}
	s, err := ctx.NewStream(cuda.NonBlocking())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()

	r := sample.NewRand()
	a, b, c := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range a {
		a[i] = r.Float()
	}
	for i := range b {
		b[i] = r.Float()
	}
	da, err := cuda.Alloc[float32](s, n)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, da.Free()) }()
	db, err := cuda.Alloc[float32](s, n)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Free()) }()
	dc, err := cuda.Alloc[float32](s, n)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, dc.Free()) }()

	var elapsed time.Duration
	for range 2 {
		clear(c)
		t0 := time.Now()
		if err := cuda.CopyToDevice(s, da, a); err != nil {
			return err
		}
		if err := cuda.CopyToDevice(s, db, b); err != nil {
			return err
		}
		if err := s.Launch(add, cuda.Grid(blocks, 1, 1), cuda.Block(threads, 1, 1), da.Arg(), db.Arg(), dc.Arg(), cuda.Int32(n)); err != nil {
			return err
		}
		if err := cuda.CopyToHost(s, c, dc); err != nil {
			return err
		}
		if err := s.Sync(context.Background()); err != nil {
			return err
		}
		elapsed = time.Since(t0)
	}

	bad := 0
	for i := range c {
		if math.Abs(float64(a[i]+b[i]-c[i])) > 1e-5 {
			bad++
		}
	}
	fmt.Printf("vectoradd: %d elements, %d blocks of %d threads\n", n, blocks, threads)
	fmt.Printf("time: %.3f ms\n", sample.Ms(elapsed))
	if bad > 0 {
		fmt.Printf("check: FAILED (%d wrong sums)\n", bad)
		return errors.New("check failed")
	}
	fmt.Println("check: PASSED")
	return nil
}
