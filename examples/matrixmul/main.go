// Command matrixmul multiplies two matrices on the GPU, after NVIDIA's
// classic matrixMul sample, written with package cuda: A is 320×320 and all
// 1.0, B is 320 rows by 640 columns and all 0.01, so every element of
// C = A·B is 3.2. The kernel works on 32×32 tiles staged in shared memory,
// one block a tile of C (a 20×10 grid of 32×32 blocks).
//
// One launch warms up; the timed part is 300 launches and the wait for
// them, reported as GFLOP/s too; baseline.c times the same in C. The check
// is the classic one: every element within a relative 1e-6 × 320 of 3.2.
// It prints "check: PASSED" or exits with status 1.
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
	tile  = 32
	wa    = 320 // columns of A, rows of B
	ha    = 320 // rows of A and C
	wb    = 640 // columns of B and C
	iters = 300
)

func main() { sample.Main("matrixmul", run) }

func run() (err error) {
	env, err := sample.Open(ptx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Close()) }()
	ctx, mod := env.Ctx, env.Mod
	mul, err := mod.Func("mat_mul")
	if err != nil {
		return err
	}
	s, err := ctx.NewStream(cuda.NonBlocking())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()

	a, b, c := make([]float32, wa*ha), make([]float32, wb*wa), make([]float32, wb*ha)
	for i := range a {
		a[i] = 1
	}
	for i := range b {
		b[i] = 0.01
	}
	da, err := cuda.Alloc[float32](s, len(a))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, da.Free()) }()
	db, err := cuda.Alloc[float32](s, len(b))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Free()) }()
	dc, err := cuda.Alloc[float32](s, len(c))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, dc.Free()) }()
	if err := cuda.CopyToDevice(s, da, a); err != nil {
		return err
	}
	if err := cuda.CopyToDevice(s, db, b); err != nil {
		return err
	}

	grid, block := cuda.Grid(wb/tile, ha/tile, 1), cuda.Block(tile, tile, 1)
	launch := func() error {
		return s.Launch(mul, grid, block, dc.Arg(), da.Arg(), db.Arg(), cuda.Int32(wa), cuda.Int32(wb))
	}
	if err := launch(); err != nil {
		return err
	}
	if err := s.Sync(context.Background()); err != nil {
		return err
	}
	t0 := time.Now()
	start, err := s.Record()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, start.Close()) }()
	for range iters {
		if err := launch(); err != nil {
			return err
		}
	}
	stop, err := s.Record()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stop.Close()) }()
	if err := s.Sync(context.Background()); err != nil {
		return err
	}
	elapsed := time.Since(t0)
	gpu, err := cuda.Elapsed(start, stop)
	if err != nil {
		return err
	}
	if err := cuda.CopyToHost(s, c, dc); err != nil {
		return err
	}
	if err := s.Sync(context.Background()); err != nil {
		return err
	}

	msec := float64(elapsed) / float64(time.Millisecond)
	flops := 2.0 * wa * ha * wb
	fmt.Printf("matrixmul: A %dx%d, B %dx%d, %d launches: %.1f GFLOP/s, %.4f ms a launch\n",
		ha, wa, wa, wb, iters, flops*iters/(msec*1e6), msec/iters)
	fmt.Printf("between events on the stream: %.3f ms\n", float64(gpu)/float64(time.Millisecond))
	fmt.Printf("time: %.3f ms\n", msec)
	bad := 0
	want := wa * 0.01
	for _, v := range c {
		if math.Abs(float64(v)-want)/math.Abs(want)/wa > 1e-6 {
			bad++
		}
	}
	if bad > 0 {
		fmt.Printf("check: FAILED (%d wrong elements)\n", bad)
		return errors.New("check failed")
	}
	fmt.Println("check: PASSED")
	return nil
}
