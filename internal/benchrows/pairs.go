//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// waitPair: sync.Stream on the fixture's idle stream against
// cuStreamSynchronize.
func (f *Fixture) waitPair(c *C) pair {
	ctx := context.Background()
	return pair{op: "wait, idle stream", a: "sync.Stream (Auto)", bName: "C cuStreamSynchronize", perRound: 20000, pairs: 21,
		setup: func(b *testing.B) (func(int) error, func(int) error) {
			return func(n int) error {
					for range n {
						if err := sync.Stream(ctx, 0, f.Stream); err != nil {
							return err
						}
					}
					return nil
				}, func(n int) error {
					return cErr(c.streamSync(f.Stream, n))
				}
		}}
}

// eventPair: sync.Event on an event that has completed against
// cuEventSynchronize.
func (f *Fixture) eventPair(c *C) pair {
	ctx := context.Background()
	return pair{op: "wait, event already done", a: "sync.Event (Auto)", bName: "C cuEventSynchronize", perRound: 20000, pairs: 21,
		setup: func(b *testing.B) (func(int) error, func(int) error) {
			var ev libcuda.Event
			must(b, libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
			b.Cleanup(func() { must(b, libcuda.EventDestroy(ev)) })
			must(b, libcuda.EventRecord(ev, f.Stream))
			must(b, libcuda.StreamSynchronize(f.Stream))
			return func(n int) error {
					for range n {
						if err := sync.Event(ctx, ev); err != nil {
							return err
						}
					}
					return nil
				}, func(n int) error {
					return cErr(c.eventSync(ev, n))
				}
		}}
}

// floorPairs: one query through libcuda, the least a wait can cost from
// Go, against C's query and synchronize: what is left of a wait's ratio
// beyond these is package sync's own.
func (f *Fixture) floorPairs(c *C) []pair {
	var ev libcuda.Event
	event := func(b *testing.B) libcuda.Event {
		if ev == 0 {
			must(b, libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
			b.Cleanup(func() { must(b, libcuda.EventDestroy(ev)); ev = 0 })
			must(b, libcuda.EventRecord(ev, f.Stream))
			must(b, libcuda.StreamSynchronize(f.Stream))
		}
		return ev
	}
	streamQuery := func(n int) error {
		for range n {
			if err := libcuda.StreamQuery(f.Stream); err != nil {
				return err
			}
		}
		return nil
	}
	eventQuery := func(ev libcuda.Event) func(n int) error {
		return func(n int) error {
			for range n {
				if err := libcuda.EventQuery(ev); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return []pair{
		{op: "wait, idle stream", a: "libcuda.StreamQuery (one Go call: the floor)", bName: "C cuStreamSynchronize", perRound: 20000, pairs: 21,
			setup: func(b *testing.B) (func(int) error, func(int) error) {
				return streamQuery, func(n int) error { return cErr(c.streamSync(f.Stream, n)) }
			}},
		{op: "cuStreamQuery (idle)", a: "libcuda.StreamQuery", bName: "C cuStreamQuery", perRound: 20000, pairs: 21,
			setup: func(b *testing.B) (func(int) error, func(int) error) {
				return streamQuery, func(n int) error { return cErr(c.streamQuery(f.Stream, n)) }
			}},
		{op: "wait, event already done", a: "libcuda.EventQuery (one Go call: the floor)", bName: "C cuEventSynchronize", perRound: 20000, pairs: 21,
			setup: func(b *testing.B) (func(int) error, func(int) error) {
				ev := event(b)
				return eventQuery(ev), func(n int) error { return cErr(c.eventSync(ev, n)) }
			}},
		{op: "cuEventQuery (done)", a: "libcuda.EventQuery", bName: "C cuEventQuery", perRound: 20000, pairs: 21,
			setup: func(b *testing.B) (func(int) error, func(int) error) {
				ev := event(b)
				return eventQuery(ev), func(n int) error { return cErr(c.eventQuery(ev, n)) }
			}},
	}
}

// launchPair: Function.Launch of sum_i64 (4 arguments: in, n, out,
// spin_ns; n and spin_ns 0, so the kernel stores one word) against
// cuLaunchKernel, a round of launches then a synchronize.
func (f *Fixture) launchPair(c *C) pair {
	return pair{op: "launch, 4 args, then a wait each 1000", a: "Function.Launch", bName: "C cuLaunchKernel", perRound: 1000, pairs: 21,
		setup: func(b *testing.B) (func(int) error, func(int) error) {
			fn, buf := f.launchSetup(b)
			one := libcuda.Dim3{X: 1}
			return func(n int) error {
					for range n {
						if err := fn.Launch(one, one, 0, f.Stream, buf, uint64(0), buf+8, uint64(0)); err != nil {
							return err
						}
					}
					return libcuda.StreamSynchronize(f.Stream)
				}, func(n int) error {
					return cErr(c.launch4(fn.Handle(), f.Stream, uint64(buf), 0, uint64(buf+8), 0, n))
				}
		}}
}

// launchSetup loads sum_i64 and allocates the 64 bytes its launches
// use, both freed when the benchmark ends.
func (f *Fixture) launchSetup(b *testing.B) (libcuda.Func, libcuda.Deviceptr) {
	m, err := libcuda.LoadModule(kernels.PTX)
	must(b, err)
	fn, err := m.Function("sum_i64")
	must(b, err)
	var buf libcuda.Deviceptr
	must(b, libcuda.MemAlloc(&buf, 64))
	b.Cleanup(func() {
		must(b, libcuda.WithContext(f.Ctx, func() error { return errors.Join(libcuda.MemFree(buf), libcuda.ModuleUnload(m)) }))
	})
	return fn, buf
}

// streamLaunchPair: package cuda's Stream.Launch of sum_i64 with 4
// arguments (two Slices, so that the launch records their uses, and two
// values), written in the call as a user writes them, with every check and
// record of a launch on (argument types, the launch history, the Slices'
// stream ordering), against cuLaunchKernel with the same function,
// stream and addresses; a round of launches then a synchronize.
func (f *Fixture) streamLaunchPair(c *C) pair {
	return pair{op: "launch, 4 args, then a wait each 1000", a: "cuda.Stream.Launch", bName: "C cuLaunchKernel", perRound: 1000, pairs: 21,
		setup: func(b *testing.B) (func(int) error, func(int) error) {
			sl := newStreamLaunch(b)
			return sl.round, func(n int) error {
				return cErr(c.launch4(sl.fn.Raw(), sl.s.Raw(), uint64(sl.in.DevicePtr()), 0, uint64(sl.out.DevicePtr()), 0, n))
			}
		}}
}

// streamLaunchPtrPair is streamLaunchPair with the Slices' device
// addresses passed as raw pointers (cuda.Ptr): the same checks, holds of
// the stream and the module and history, without the Slices' holds,
// ordering and records, so that the difference between the two rows is
// what two Slice arguments cost a launch.
func (f *Fixture) streamLaunchPtrPair(c *C) pair {
	return pair{op: "launch, 4 args, then a wait each 1000", a: "cuda.Stream.Launch, raw pointers", bName: "C cuLaunchKernel", perRound: 1000, pairs: 21,
		setup: func(b *testing.B) (func(int) error, func(int) error) {
			sl := newStreamLaunch(b)
			in, out := sl.in.DevicePtr(), sl.out.DevicePtr()
			one := cuda.Grid(1, 1, 1)
			return func(n int) error {
					for range n {
						if err := sl.s.Launch(sl.fn, one, one, cuda.Ptr(in), cuda.Uint64(0), cuda.Ptr(out), cuda.Uint64(0)); err != nil {
							return err
						}
					}
					return libcuda.StreamSynchronize(sl.s.Raw())
				}, func(n int) error {
					return cErr(c.launch4(sl.fn.Raw(), sl.s.Raw(), uint64(in), 0, uint64(out), 0, n))
				}
		}}
}

// hostFuncPair: host functions in a stream, each run after the one
// before (the stream waits for each), then a wait: what a host function
// costs the stream's timeline, as simplecudagraphs' check does. C's run on
// the driver's callback thread; Go's too with direct
// (Stream.HostFuncOnDriverThread), else on a goroutine of package cuda
// that the callback thread hands them to (Stream.HostFunc). With idle set,
// each host function is waited for on its own and followed by that long
// a sleep on both sides, so that package cuda's worker has gone idle (it
// spins 50µs) by the next one, as between simplecudagraphs' launches: the
// hand-off then wakes threads.
func (f *Fixture) hostFuncPair(c *C) pair { return f.hostFuncRow(c, false, 0) }

// hostFuncPairs are hostFuncPair's other rows: through
// HostFuncOnDriverThread, and both ways with a millisecond idle between
// host functions.
func (f *Fixture) hostFuncPairs(c *C) []pair {
	return []pair{f.hostFuncRow(c, true, 0), f.hostFuncRow(c, false, time.Millisecond), f.hostFuncRow(c, true, time.Millisecond)}
}

func (f *Fixture) hostFuncRow(c *C, direct bool, idle time.Duration) pair {
	op, way, perRound := "host function in a stream, then a wait each 100", "cuda.Stream.HostFunc", 100
	if idle > 0 {
		op, perRound = fmt.Sprintf("host function and a wait, then %v idle", idle), 20
	}
	if direct {
		way = "cuda.Stream.HostFuncOnDriverThread"
	}
	return pair{op: op, a: way, bName: "C cuLaunchHostFunc", perRound: perRound, pairs: 21,
		setup: func(b *testing.B) (func(int) error, func(int) error) {
			sl := newStreamLaunch(b)
			var calls atomic.Int64
			count := func() { calls.Add(1) }
			submit := sl.s.HostFunc
			if direct {
				submit = sl.s.HostFuncOnDriverThread
			}
			goRound := func(n int) error {
				before := calls.Load()
				for range n {
					if err := submit(count); err != nil {
						return err
					}
				}
				if err := sl.s.Sync(context.Background()); err != nil {
					return err
				}
				if got := calls.Load() - before; got != int64(n) {
					return fmt.Errorf("%d of %d host functions ran", got, n)
				}
				return nil
			}
			cRound := func(n int) error { return cErr(c.hostFuncs(sl.s.Raw(), n)) }
			if idle == 0 {
				return goRound, cRound
			}
			spaced := func(round func(int) error) func(int) error {
				return func(n int) error {
					for range n {
						if err := round(1); err != nil {
							return err
						}
						time.Sleep(idle)
					}
					return nil
				}
			}
			return spaced(goRound), spaced(cRound)
		}}
}

// streamLaunch is the Go half of streamLaunchPair: a context, a stream,
// sum_i64 and two Slices of package cuda, closed when the benchmark ends.
type streamLaunch struct {
	s       *cuda.Stream
	fn      *cuda.Func
	in, out cuda.Slice[int64]
}

// newStream makes a context on the first device and a non-blocking
// stream in it, closed when the benchmark ends.
func newStream(b *testing.B) (*cuda.Context, *cuda.Stream) {
	devs, err := cuda.Devices()
	must(b, err)
	ctx, err := devs[0].Context()
	must(b, err)
	b.Cleanup(func() { must(b, ctx.Close()) })
	s, err := ctx.NewStream(cuda.NonBlocking())
	must(b, err)
	b.Cleanup(func() { must(b, s.Close()) })
	return ctx, s
}

func newStreamLaunch(b *testing.B) *streamLaunch {
	ctx, s := newStream(b)
	mod, err := cuda.LoadModule(ctx, kernels.PTX)
	must(b, err)
	b.Cleanup(func() { must(b, mod.Close()) })
	fn, err := mod.Func("sum_i64")
	must(b, err)
	in, err := cuda.Alloc[int64](s, 1)
	must(b, err)
	out, err := cuda.Alloc[int64](s, 1)
	must(b, err)
	b.Cleanup(func() { must(b, errors.Join(in.Free(), out.Free(), s.Sync(context.Background()))) })
	return &streamLaunch{s: s, fn: fn, in: in, out: out}
}

// round launches n times, then waits for the stream.
func (sl *streamLaunch) round(n int) error {
	one := cuda.Grid(1, 1, 1)
	for range n {
		if err := sl.s.Launch(sl.fn, one, one, sl.in.Arg(), cuda.Uint64(0), sl.out.Arg(), cuda.Uint64(0)); err != nil {
			return err
		}
	}
	return libcuda.StreamSynchronize(sl.s.Raw())
}

// cachedPairs: graph.Cached.Run of 100 kernels, the same each time, and
// a wait, against C's capture, cuGraphExecUpdate, cuGraphLaunch and
// cuStreamSynchronize. The first row's captured function launches through
// cuLaunchKernel with arguments made once, so that its allocations are
// Cached.Run's own; the second's through Function.Launch; the third is the
// first through Cached.RunCurrent (the fixture's thread has the context
// current, as C's: no driver call to find it).
func (f *Fixture) cachedPairs(c *C) []pair {
	ctx := context.Background()
	const op = "100-kernel capture + update + launch + wait, unchanged"
	mk := func(way string, raw, current bool) pair {
		return pair{op: op, a: way, bName: "C capture + cuGraphExecUpdate + launch + sync", perRound: 20, pairs: 11,
			setup: func(b *testing.B) (func(int) error, func(int) error) {
				gs := f.graphSetup(b)
				n := uint64(graphInts)
				// The raw launches' arguments: pinned, as C holds them.
				args := &struct {
					buf    libcuda.Deviceptr
					n      uint64
					params [2]unsafe.Pointer
				}{buf: gs.buf, n: n}
				args.params = [2]unsafe.Pointer{unsafe.Pointer(&args.buf), unsafe.Pointer(&args.n)}
				var pin runtime.Pinner
				pin.Pin(args)
				b.Cleanup(pin.Unpin)
				body := func(s libcuda.Stream) error {
					if !raw {
						return gs.launches(s, false)
					}
					for range GraphKernels {
						if err := libcuda.LaunchKernel(gs.addOne.Handle(), 1, 1, 1, graphInts, 1, 1, 0, s, &args.params[0], nil); err != nil {
							return err
						}
					}
					return nil
				}
				cached := graph.NewCached(graph.DefaultMode)
				b.Cleanup(func() { must(b, cached.Close()) })
				return func(k int) error {
						for range k {
							var err error
							if current {
								err = cached.RunCurrent(f.Ctx, f.Stream, body)
							} else {
								err = cached.Run(f.Stream, body)
							}
							if err != nil {
								return err
							}
							if err := sync.Stream(ctx, 0, f.Stream); err != nil {
								return err
							}
						}
						return nil
					}, func(k int) error {
						return cErr(c.cachedKernels(gs.addOne.Handle(), f.Stream, gs.buf, n, GraphKernels, k))
					}
			}}
	}
	return []pair{
		mk("Cached.Run, 100 cuLaunchKernel", true, false),
		mk("Cached.Run, 100 Function.Launch", false, false),
		mk("Cached.RunCurrent, 100 cuLaunchKernel", true, true),
	}
}

// usePairs: what a Buffer.Use inside each capture costs: graph.Cached.Run
// of a copy to wrapped host memory and a wait, with the memory Use()d in
// the capture against the same without the Use.
func (f *Fixture) usePairs() []pair {
	ctx := context.Background()
	return []pair{{op: "Buffer.Use inside a capture (Cached.Run of a copy to host + wait)", a: "Use()d", bName: "not Use()d", perRound: 200, pairs: 21,
		setup: func(b *testing.B) (func(int) error, func(int) error) {
			var d libcuda.Deviceptr
			must(b, libcuda.MemAlloc(&d, 8))
			host := make([]float64, 1)
			buf, err := hostmem.Wrap(f.Ctx, host)
			must(b, err)
			b.Cleanup(func() {
				must(b, buf.Free())
				must(b, libcuda.WithContext(f.Ctx, func() error { return libcuda.MemFree(d) }))
				drainB(b)
			})
			round := func(use bool) func(k int) error {
				cached := graph.NewCached(graph.DefaultMode)
				b.Cleanup(func() { must(b, cached.Close()) })
				body := func(s libcuda.Stream) error {
					if err := libcuda.MemcpyDtoHAsync(buf.Pointer(), d, 8, s); err != nil {
						return err
					}
					if use {
						return buf.Use(s)
					}
					return nil
				}
				return func(k int) error {
					for range k {
						if err := cached.Run(f.Stream, body); err != nil {
							return err
						}
						if err := sync.Stream(ctx, 0, f.Stream); err != nil {
							return err
						}
					}
					return nil
				}
			}
			return round(true), round(false)
		}}}
}
