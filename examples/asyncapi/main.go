// Command asyncapi shows that the CPU is free while the GPU works, after
// NVIDIA's classic asyncAPI sample, written with package cuda. It issues,
// on one stream, a copy of 16 Mi ints (64 MiB) from pinned host memory to
// the device, a kernel that adds 26 to each, and the copy back, records an
// event after them, and then counts how many times the CPU asks the event
// whether it has completed while the GPU does the work. The device memory
// starts as 0xff bytes (-1 ints) and the host's as zeros, so every int must come back
// as 26.
//
// The timed part is from the first call until the event is seen complete
// (the event pair gives the GPU's own time too); baseline.c times the same
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
	n       = 16 << 20
	value   = 26
	threads = 512
)

func main() { sample.Main("asyncapi", run) }

func run() (err error) {
	env, err := sample.Open(ptx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Close()) }()
	ctx, mod := env.Ctx, env.Mod
	add, err := mod.Func("add_value")
	if err != nil {
		return err
	}
	s, err := ctx.NewStream(cuda.NonBlocking())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()

	buf, err := cuda.AllocPinned[int32](ctx, n)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, buf.Free()) }()
	d, err := cuda.Alloc[int32](s, n)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, d.Free()) }()
	if err := cuda.Memset(s, d, -1); err != nil {
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
	if err := cuda.CopyToDevice(s, d, buf); err != nil {
		return err
	}
	if err := s.Launch(add, cuda.Grid(n/threads, 1, 1), cuda.Block(threads, 1, 1), d.Arg(), cuda.Int32(value), cuda.Int32(n)); err != nil {
		return err
	}
	if err := cuda.CopyToHost(s, buf, d); err != nil {
		return err
	}
	stop, err := s.Record()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stop.Close()) }()
	issued := time.Since(t0)
	polls := 0
	for {
		done, err := stop.Query()
		if err != nil {
			return err
		}
		if done {
			break
		}
		polls++
	}
	elapsed := time.Since(t0)
	gpu, err := cuda.Elapsed(start, stop)
	if err != nil {
		return err
	}

	fmt.Printf("asyncapi: %d ints; issuing took %.3f ms, the GPU %.3f ms; the CPU polled %d times meanwhile\n",
		n, sample.Ms(issued), sample.Ms(gpu), polls)
	fmt.Printf("time: %.3f ms\n", sample.Ms(elapsed))
	for i, v := range buf.Data() {
		if v != value {
			fmt.Printf("a[%d] = %d, want %d\ncheck: FAILED\n", i, v, value)
			return errors.New("check failed")
		}
	}
	fmt.Println("check: PASSED")
	return nil
}
