// Command simplecudagraphs captures a reduction into a CUDA graph, with a
// host function in it that checks the result, after NVIDIA's classic
// simpleCudaGraphs sample, written with package cuda. The work is the sum
// of 16 Mi floats (64 MiB): copy them in from pinned host memory, zero 512
// partial sums, 512 blocks of 512 threads each add up their share into a
// partial sum (in double), zero the total, one block adds up the partial
// sums, copy the total back to pinned host memory, and a Go function
// (Stream.HostFuncOnDriverThread) compares it with the sum the CPU
// computed. The inputs are multiples of 1/256, so the sums are exact and
// the comparison is equality. The stream's work is captured once
// (Stream.Capture), the graph instantiated once and launched 3 times.
//
// The timed part is the 3 launches and the wait for them; baseline.c times
// the same in C. It prints "check: PASSED" when the host function ran 3
// times and saw the right sum each time, or exits with status 1.
package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/examples/internal/sample"
)

//go:embed kernels.ptx
var ptx []byte

const (
	n        = 1 << 24
	blocks   = 512
	threads  = 512
	launches = 3
)

func main() { sample.Main("simplecudagraphs", run) }

func run() (err error) {
	env, err := sample.Open(ptx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Close()) }()
	ctx, mod := env.Ctx, env.Mod
	partial, err := mod.Func("partial_sums")
	if err != nil {
		return err
	}
	whole, err := mod.Func("total_sum")
	if err != nil {
		return err
	}
	s, err := ctx.NewStream(cuda.NonBlocking())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()

	in := make([]float32, n)
	var want float64
	for i := range in {
		in[i] = float32((uint32(i)*37+11)%256) / 256
		want += float64(in[i])
	}
	total := make([]float64, 1)
	inBuf, err := cuda.Pin(ctx, in)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, inBuf.Free()) }()
	totalBuf, err := cuda.Pin(ctx, total)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, totalBuf.Free()) }()
	din, err := cuda.Alloc[float32](s, n)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, din.Free()) }()
	dpart, err := cuda.Alloc[float64](s, blocks)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, dpart.Free()) }()
	dtotal, err := cuda.Alloc[float64](s, 1)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, dtotal.Free()) }()
	if err := s.Sync(context.Background()); err != nil {
		return err
	}

	// The host function runs after the total has been copied back, on the
	// driver's own thread as the C program's does (HostFuncOnDriverThread:
	// no goroutine to wake for it); it only reads total and counts, and
	// calls no runtime.Goexit.
	var passed, failed atomic.Int32
	checkTotal := func() {
		if total[0] == want {
			passed.Add(1)
			return
		}
		failed.Add(1)
		fmt.Printf("the graph's total is %.17g, want %.17g\n", total[0], want)
	}
	g, err := s.Capture(func(s *cuda.Stream) error {
		if err := cuda.CopyToDevice(s, din, inBuf); err != nil {
			return err
		}
		if err := cuda.Zero(s, dpart); err != nil {
			return err
		}
		if err := s.Launch(partial, cuda.Grid(blocks, 1, 1), cuda.Block(threads, 1, 1), din.Arg(), cuda.Uint64(n), dpart.Arg()); err != nil {
			return err
		}
		if err := cuda.Zero(s, dtotal); err != nil {
			return err
		}
		if err := s.Launch(whole, cuda.Grid(1, 1, 1), cuda.Block(threads, 1, 1), dpart.Arg(), cuda.Uint64(blocks), dtotal.Arg()); err != nil {
			return err
		}
		if err := cuda.CopyToHost(s, totalBuf, dtotal); err != nil {
			return err
		}
		return s.HostFuncOnDriverThread(checkTotal)
	})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, g.Destroy()) }()
	nodes, err := g.Nodes()
	if err != nil {
		return err
	}
	e, err := g.Instantiate()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Destroy()) }()

	// The events are made before the clock starts, as baseline.c's are.
	start, err := cuda.NewEvent(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, start.Close()) }()
	stop, err := cuda.NewEvent(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stop.Close()) }()
	t0 := time.Now()
	if err := s.RecordEvent(start); err != nil {
		return err
	}
	for range launches {
		if err := s.LaunchGraph(e); err != nil {
			return err
		}
	}
	if err := s.RecordEvent(stop); err != nil {
		return err
	}
	if err := s.Sync(context.Background()); err != nil {
		return err
	}
	elapsed := time.Since(t0)
	gpu, err := cuda.Elapsed(start, stop)
	if err != nil {
		return err
	}

	fmt.Printf("simplecudagraphs: a graph of %d nodes summing %d floats, launched %d times\n", nodes, n, launches)
	fmt.Printf("between events on the stream: %.3f ms\n", float64(gpu)/float64(time.Millisecond))
	fmt.Printf("time: %.3f ms\n", float64(elapsed)/float64(time.Millisecond))
	p, f := passed.Load(), failed.Load()
	if p != launches || f != 0 {
		fmt.Printf("check: FAILED (%d of %d host checks passed)\n", p, launches)
		return errors.New("check failed")
	}
	fmt.Printf("check: PASSED (%d of %d host checks passed)\n", p, launches)
	return nil
}
