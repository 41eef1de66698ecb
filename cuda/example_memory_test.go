package cuda_test

import (
	"context"
	"fmt"
	"log"
	"math"

	"github.com/purecuda/purecuda/cuda"
)

// exampleStream is the first device's context and a stream, for the
// examples below.
func exampleStream() (*cuda.Context, *cuda.Stream) {
	devs, err := cuda.Devices()
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := devs[0].Context()
	if err != nil {
		log.Fatal(err)
	}
	s, err := ctx.NewStream()
	if err != nil {
		log.Fatal(err)
	}
	return ctx, s
}

// A fork/join between two streams with two events made once and recorded
// again every iteration.
func ExampleStream_RecordEvent() {
	ctx, s1 := exampleStream()
	defer ctx.Close()
	defer s1.Close()
	s2, err := ctx.NewStream()
	if err != nil {
		log.Fatal(err)
	}
	defer s2.Close()
	fork, err := cuda.NewEvent(ctx, cuda.DisableTiming())
	if err != nil {
		log.Fatal(err)
	}
	defer fork.Close()
	join, err := cuda.NewEvent(ctx, cuda.DisableTiming())
	if err != nil {
		log.Fatal(err)
	}
	defer join.Close()
	for range 3 {
		// ... work on s1
		if err := s1.RecordEvent(fork); err != nil {
			log.Fatal(err)
		}
		if err := s2.Wait(fork); err != nil {
			log.Fatal(err)
		}
		// ... work on s2 that needs s1's
		if err := s2.RecordEvent(join); err != nil {
			log.Fatal(err)
		}
		if err := s1.Wait(join); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("three iterations, two events")
	// Output: three iterations, two events
}

// A pitched 2D array: rows copied in from a dense host matrix, a
// rectangle of it copied back.
func ExampleAllocPitch() {
	ctx, s := exampleStream()
	defer ctx.Close()
	defer s.Close()
	m, err := cuda.AllocPitch[int32](s, 4, 3)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Free()
	host := []int32{
		1, 2, 3, 4,
		5, 6, 7, 8,
		9, 10, 11, 12,
	}
	if err := cuda.CopyToDevice2D(s, m, host); err != nil {
		log.Fatal(err)
	}
	sub, err := m.Sub(1, 1, 2, 2)
	if err != nil {
		log.Fatal(err)
	}
	out := make([]int32, 4)
	if err := cuda.CopyToHost2D(s, out, sub); err != nil { // into pageable memory: waits
		log.Fatal(err)
	}
	fmt.Println(out, m.Pitch()%512 == 0)
	// Output: [6 7 10 11] true
}

// A pool of one's own that keeps freed memory for the next allocations,
// and its figures.
func ExampleNewMemPool() {
	ctx, s := exampleStream()
	defer ctx.Close()
	defer s.Close()
	pool, err := cuda.NewMemPool(ctx.Device())
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := pool.SetReleaseThreshold(math.MaxUint64); err != nil {
		log.Fatal(err)
	}
	x, err := cuda.AllocFrom[float32](pool, s, 1<<18) // 1 MiB
	if err != nil {
		log.Fatal(err)
	}
	if err := x.Free(); err != nil {
		log.Fatal(err)
	}
	if err := s.Sync(context.Background()); err != nil {
		log.Fatal(err)
	}
	u, err := pool.Usage()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("used:", u.UsedCurrent, "kept:", u.ReservedCurrent >= 1<<20)
	// The driver lets a freed block go only once a synchronizing call has
	// seen the free done (see Trim).
	if err := ctx.Sync(context.Background()); err != nil {
		log.Fatal(err)
	}
	if err := pool.Trim(0); err != nil {
		log.Fatal(err)
	}
	u, err = pool.Usage()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after Trim:", u.ReservedCurrent)
	// Output:
	// used: 0 kept: true
	// after Trim: 0
}

// Managed memory written on the host, prefetched to the device for a
// kernel, read on the host after a Sync.
func ExampleAllocManaged() {
	ctx, s := exampleStream()
	defer ctx.Close()
	defer s.Close()
	m, err := cuda.AllocManaged[float32](ctx, 1024, cuda.AttachGlobal)
	if err != nil {
		log.Fatal(err)
	}
	for i := range m.Data() {
		m.Data()[i] = float32(i)
	}
	if ok, _ := ctx.Device().ConcurrentManagedAccess(); ok {
		if err := m.Prefetch(s, cuda.OnDevice(ctx.Device())); err != nil {
			log.Fatal(err)
		}
	}
	// ... launch kernels with m.Arg() on s
	if err := s.Sync(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Data()[10])
	if err := m.Free(); err != nil { // Data must not be used after this
		log.Fatal(err)
	}
	// Output: 10
}

// Sixteen views of one pinned buffer, each copied asynchronously.
func ExamplePinned_Slice() {
	ctx, s := exampleStream()
	defer ctx.Close()
	defer s.Close()
	p, err := cuda.AllocPinned[int32](ctx, 16*64)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Free()
	x, err := cuda.Alloc[int32](s, 16*64)
	if err != nil {
		log.Fatal(err)
	}
	defer x.Free()
	for i := range 16 {
		v, err := p.Slice(i*64, (i+1)*64)
		if err != nil {
			log.Fatal(err)
		}
		d, err := x.Slice(i*64, (i+1)*64)
		if err != nil {
			log.Fatal(err)
		}
		if err := cuda.CopyToDevice(s, d, v); err != nil { // asynchronous, recorded on p
			log.Fatal(err)
		}
	}
	fmt.Println("16 asynchronous copies")
	// Output: 16 asynchronous copies
}
