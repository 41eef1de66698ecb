// Command simplestreams overlaps copies with kernels by splitting the work
// over streams, after NVIDIA's classic simpleStreams sample, written with
// package cuda. The device holds 16 Mi ints (64 MiB); a kernel adds 5 to
// each, 5 times over, and the array is copied back into pinned host memory
// (as 4 copies of a quarter each); that is repeated 10 times. First all on one stream, then with the array
// cut into 4 chunks, each on its own stream (kernel, then copy of its
// chunk), so that one chunk's copy runs beside another's kernel. After 10
// repetitions every int must be 250, in both runs.
//
// Both parts are timed (each from the first launch until its streams are
// done); "time:" is the 4-stream part, which baseline.c times the same way
// in C. It prints "check: PASSED" or exits with status 1.
package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/examples/internal/sample"
)

//go:embed kernels.ptx
var ptx []byte

const (
	n        = 16 << 20
	nstreams = 4
	chunk    = n / nstreams
	reps     = 10
	rounds   = 5
	step     = 5
	threads  = 512
)

func main() { sample.Main("simplestreams", run) }

func run() (err error) {
	env, err := sample.Open(ptx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Close()) }()
	ctx, mod := env.Ctx, env.Mod
	add, err := mod.Func("add_repeat")
	if err != nil {
		return err
	}
	var st [nstreams]*cuda.Stream
	for i := range st {
		if st[i], err = ctx.NewStream(cuda.NonBlocking()); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, st[i].Close()) }()
	}
	s0 := st[0]
	bg := context.Background()

	// The host array is pinned as 4 chunks, one for each stream's copies
	// (package cuda has no view of a part of a Pinned).
	a := make([]int32, n)
	var ha [nstreams]*cuda.Pinned[int32]
	for i := range ha {
		if ha[i], err = cuda.Pin(ctx, a[i*chunk:(i+1)*chunk]); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, ha[i].Free()) }()
	}
	var dc [nstreams]cuda.Slice[int32]
	d, err := cuda.Alloc[int32](s0, n)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, d.Free()) }()
	dstep, err := cuda.Alloc[int32](s0, 1)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, dstep.Free()) }()
	if err := cuda.CopyToDevice(s0, dstep, []int32{step}); err != nil {
		return err
	}
	for i := range dc {
		if dc[i], err = d.Slice(i*chunk, (i+1)*chunk); err != nil {
			return err
		}
	}
	// The kernel only reads *step; its extern "C" name cannot say so
	// (const), so the Arg does: else each launch would count as writing
	// it, and each stream would wait for the kernel (and the copy) of the
	// stream before it, serializing the 4 streams (see cuda.Slice's
	// ordering across streams).
	stepArg := dstep.Arg().ReadOnly()
	whole := []cuda.Arg{d.Arg(), stepArg, cuda.Int32(rounds), cuda.Int32(n)}
	// Warm up with one launch over the whole array, then start from zeros.
	if err := s0.Launch(add, cuda.Grid(n/threads, 1, 1), cuda.Block(threads, 1, 1), whole...); err != nil {
		return err
	}
	if err := cuda.Zero(s0, d); err != nil {
		return err
	}
	if err := s0.Sync(bg); err != nil {
		return err
	}

	t0 := time.Now()
	for range reps {
		if err := s0.Launch(add, cuda.Grid(n/threads, 1, 1), cuda.Block(threads, 1, 1), whole...); err != nil {
			return err
		}
		for i := range ha {
			if err := cuda.CopyToHost(s0, ha[i], dc[i]); err != nil {
				return err
			}
		}
	}
	if err := s0.Sync(bg); err != nil {
		return err
	}
	one := time.Since(t0)
	ok := check(a, "1 stream")

	if err := cuda.Zero(s0, d); err != nil {
		return err
	}
	if err := s0.Sync(bg); err != nil {
		return err
	}
	clear(a)
	t0 = time.Now()
	for range reps {
		for i, s := range st {
			if err := s.Launch(add, cuda.Grid(chunk/threads, 1, 1), cuda.Block(threads, 1, 1), dc[i].Arg(), stepArg, cuda.Int32(rounds), cuda.Int32(chunk)); err != nil {
				return err
			}
			if err := cuda.CopyToHost(s, ha[i], dc[i]); err != nil {
				return err
			}
		}
	}
	for _, s := range st {
		if err := s.Sync(bg); err != nil {
			return err
		}
	}
	four := time.Since(t0)
	ok = check(a, fmt.Sprint(nstreams, " streams")) && ok

	fmt.Printf("simplestreams: %d ints, %d repetitions, %d rounds a kernel\n", n, reps, rounds)
	fmt.Printf("1 stream:  %.3f ms (%.3f ms a repetition)\n", sample.Ms(one), sample.Ms(one)/reps)
	fmt.Printf("%d streams: %.3f ms (%.3f ms a repetition)\n", nstreams, sample.Ms(four), sample.Ms(four)/reps)
	fmt.Printf("time: %.3f ms\n", sample.Ms(four))
	if !ok {
		fmt.Println("check: FAILED")
		return errors.New("check failed")
	}
	fmt.Println("check: PASSED")
	return nil
}

// check reports whether every int of a is step·rounds·reps.
func check(a []int32, what string) bool {
	const want = step * rounds * reps
	for i, v := range a {
		if v != want {
			fmt.Printf("%s: a[%d] = %d, want %d\n", what, i, v, want)
			return false
		}
	}
	return true
}
