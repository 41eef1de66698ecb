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
	"os"
	"time"

	"github.com/purecuda/purecuda/cuda"
)

//go:embed kernels.ptx
var ptx []byte

const (
	n       = 50000
	threads = 256
	blocks  = (n + threads - 1) / threads
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "vectoradd:", err)
		os.Exit(1)
	}
}

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
	mod, err := cuda.LoadModule(ctx, ptx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, mod.Close()) }()
	add, err := mod.Func("vec_add")
	if err != nil {
		return err
	}
	s, err := ctx.NewStream(cuda.NonBlocking())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()

	r := newRand()
	a, b, c := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range a {
		a[i] = r.float()
	}
	for i := range b {
		b[i] = r.float()
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
	fmt.Printf("time: %.3f ms\n", ms(elapsed))
	if bad > 0 {
		fmt.Printf("check: FAILED (%d wrong sums)\n", bad)
		return errors.New("check failed")
	}
	fmt.Println("check: PASSED")
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// rng is the examples' pseudo-random generator, a 32-bit linear
// congruential one, the same as rnd in baseline.c so that both programs
// work on the same numbers.
type rng struct{ seed uint32 }

func newRand() *rng { return &rng{seed: 1} }

// float returns the next value, in [0, 1).
func (r *rng) float() float32 {
	r.seed = r.seed*1664525 + 1013904223
	return float32(r.seed>>8) / (1 << 24)
}
