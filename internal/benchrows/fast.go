//go:build linux

package bench

import (
	"context"
	"runtime"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// FastRows are the Go halves of the paired rows as plain benchmarks, one
// operation per b.N, for allocations (-benchmem) and profiles: a wait on
// an idle stream, on an event already done, a 4-argument launch,
// Cached.Run of 100 kernels (launched with cuLaunchKernel, so that the
// allocations are Cached.Run's), and Cached.Run of a copy to wrapped host
// memory with and without its Use.
func (f *Fixture) FastRows() []Row {
	ctx := context.Background()
	return []Row{
		{Op: "wait, idle stream", Way: "sync.Stream", F: func(b *testing.B) {
			f.OnThread(b, func(b *testing.B) {
				for b.Loop() {
					must(b, sync.Stream(ctx, 0, f.Stream))
				}
			})
		}},
		{Op: "wait, event already done", Way: "sync.Event", F: func(b *testing.B) {
			f.OnThread(b, func(b *testing.B) {
				var ev libcuda.Event
				must(b, libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
				defer func() { must(b, libcuda.EventDestroy(ev)) }()
				must(b, libcuda.EventRecord(ev, f.Stream))
				must(b, libcuda.StreamSynchronize(f.Stream))
				b.ResetTimer()
				for b.Loop() {
					must(b, sync.Event(ctx, ev))
				}
			})
		}},
		{Op: "Cached.Run, 100 kernels, unchanged", Way: "cuLaunchKernel body", F: func(b *testing.B) {
			f.OnThread(b, func(b *testing.B) {
				gs := f.graphSetup(b)
				args := &struct {
					buf    libcuda.Deviceptr
					n      uint64
					params [2]unsafe.Pointer
				}{buf: gs.buf, n: graphInts}
				args.params = [2]unsafe.Pointer{unsafe.Pointer(&args.buf), unsafe.Pointer(&args.n)}
				var pin runtime.Pinner
				pin.Pin(args)
				defer pin.Unpin()
				body := func(s libcuda.Stream) error {
					for range GraphKernels {
						if err := libcuda.LaunchKernel(gs.addOne.Handle(), 1, 1, 1, graphInts, 1, 1, 0, s, &args.params[0], nil); err != nil {
							return err
						}
					}
					return nil
				}
				c := graph.NewCached(graph.DefaultMode)
				defer func() { must(b, c.Close()) }()
				must(b, c.Run(f.Stream, body))
				must(b, sync.Stream(ctx, 0, f.Stream))
				b.ResetTimer()
				for b.Loop() {
					must(b, c.Run(f.Stream, body))
					must(b, sync.Stream(ctx, 0, f.Stream))
				}
			})
		}},
		f.copyRun(true), f.copyRun(false),
	}
}

// copyRun is Cached.Run of a copy to wrapped host memory and a wait, with
// the memory Use()d in the capture or not.
func (f *Fixture) copyRun(use bool) Row {
	way := "not Use()d"
	if use {
		way = "Use()d"
	}
	ctx := context.Background()
	return Row{Op: "Cached.Run of a copy to host", Way: way, F: func(b *testing.B) {
		f.OnThread(b, func(b *testing.B) {
			var d libcuda.Deviceptr
			must(b, libcuda.MemAlloc(&d, 8))
			host := make([]float64, 1)
			buf, err := hostmem.Wrap(f.Ctx, host)
			must(b, err)
			c := graph.NewCached(graph.DefaultMode)
			body := func(s libcuda.Stream) error {
				if err := libcuda.MemcpyDtoHAsync(buf.Pointer(), d, 8, s); err != nil {
					return err
				}
				if use {
					return buf.Use(s)
				}
				return nil
			}
			must(b, c.Run(f.Stream, body))
			must(b, sync.Stream(ctx, 0, f.Stream))
			b.ResetTimer()
			for b.Loop() {
				must(b, c.Run(f.Stream, body))
				must(b, sync.Stream(ctx, 0, f.Stream))
			}
			b.StopTimer()
			must(b, c.Close())
			must(b, buf.Free())
			drainB(b)
			must(b, libcuda.MemFree(d))
		})
	}}
}
