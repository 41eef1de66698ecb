//go:build linux && !gpu

package nccl_test

import (
	"context"
	"fmt"
	"log"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/nccl"
)

// Two ranks of one process, one on each of two devices, sum a vector.
func ExampleAllReduce() {
	devs, err := cuda.Devices()
	if err != nil {
		log.Fatal(err)
	}
	comms, err := nccl.InitAll(devs[:2])
	if err != nil {
		log.Fatal(err)
	}
	streams := make([]*cuda.Stream, 2)
	bufs := make([]cuda.Slice[float32], 2)
	for i, c := range comms {
		defer c.Close()
		ctx, err := c.Device().Context()
		if err != nil {
			log.Fatal(err)
		}
		defer ctx.Close()
		if streams[i], err = ctx.NewStream(); err != nil {
			log.Fatal(err)
		}
		defer streams[i].Close()
		if bufs[i], err = cuda.Alloc[float32](streams[i], 3); err != nil {
			log.Fatal(err)
		}
		defer bufs[i].Free()
		if err := cuda.CopyToDevice(streams[i], bufs[i], []float32{1, 2, float32(10 * (i + 1))}); err != nil {
			log.Fatal(err)
		}
	}
	// One goroutine drives both ranks: their calls go in one group.
	err = nccl.Group(func() error {
		for i, c := range comms {
			if err := nccl.AllReduceInPlace(c, streams[i], bufs[i], nccl.Sum); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	out := make([]float32, 3)
	for i, c := range comms {
		if err := c.Sync(context.Background(), streams[i]); err != nil {
			log.Fatal(err)
		}
		if err := cuda.CopyToHost(streams[i], out, bufs[i]); err != nil {
			log.Fatal(err)
		}
		if err := streams[i].Sync(context.Background()); err != nil {
			log.Fatal(err)
		}
		fmt.Println("rank", c.Rank(), out)
	}
	// Output:
	// rank 0 [2 4 30]
	// rank 1 [2 4 30]
}
