// Command simplezerocopy lets a kernel work on host memory directly, after
// NVIDIA's classic simpleZeroCopy sample, written with package cuda. Three
// Go slices of 1 Mi floats (a and b random, c for the sum) are pinned with
// cuda.Pin, which registers them and maps them into the device's
// address space; the kernel (256 threads a block, 4,096 blocks) reads a and
// b and writes c across the bus, with no copies. The check is the classic
// one: the relative L2 norm of c - (a+b) below 1e-6.
//
// One launch warms up; the timed part is one launch and the wait for it;
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
	n       = 1 << 20
	threads = 256
	blocks  = (n + threads - 1) / threads
)

func main() { sample.Main("simplezerocopy", run) }

func run() (err error) {
	env, err := sample.Open(ptx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Close()) }()
	ctx, mod := env.Ctx, env.Mod
	add, err := mod.Func("mapped_add")
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
	var bufs [3]*cuda.Pinned[float32]
	for i, h := range [][]float32{a, b, c} {
		if bufs[i], err = cuda.Pin(ctx, h); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, bufs[i].Free()) }()
	}
	launch := func() error {
		return s.Launch(add, cuda.Grid(blocks, 1, 1), cuda.Block(threads, 1, 1), bufs[0].Arg(), bufs[1].Arg(), bufs[2].Arg(), cuda.Int32(n))
	}
	if err := launch(); err != nil {
		return err
	}
	if err := s.Sync(context.Background()); err != nil {
		return err
	}
	clear(c)
	t0 := time.Now()
	if err := launch(); err != nil {
		return err
	}
	if err := s.Sync(context.Background()); err != nil {
		return err
	}
	elapsed := time.Since(t0)

	var diff, ref float64
	for i := range c {
		want := float64(a[i]) + float64(b[i])
		diff += (want - float64(c[i])) * (want - float64(c[i]))
		ref += want * want
	}
	rel := math.Sqrt(diff) / math.Sqrt(ref)
	fmt.Printf("simplezerocopy: %d floats in mapped host memory, relative L2 error %.3g\n", n, rel)
	fmt.Printf("time: %.3f ms\n", float64(elapsed)/float64(time.Millisecond))
	if !(rel < 1e-6) {
		fmt.Println("check: FAILED")
		return errors.New("check failed")
	}
	fmt.Println("check: PASSED")
	return nil
}
