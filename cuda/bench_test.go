package cuda_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// BenchmarkOps measures the other calls' costs and allocations, for the
// record (-benchmem); only Launch is held to 0 allocations.
func BenchmarkOps(b *testing.B) {
	f := newFixture(b)
	b.Run("AllocFree", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			x, err := cuda.Alloc[float32](f.s, 256)
			if err != nil {
				b.Fatal(err)
			}
			if err := x.Free(); err != nil {
				b.Fatal(err)
			}
		}
		sync(b, f.s)
	})
	b.Run("CopyToDevicePageable", func(b *testing.B) {
		x := alloc(b, f.s, make([]float32, 256))
		host := make([]float32, 256)
		b.ReportAllocs()
		for b.Loop() {
			if err := cuda.CopyToDevice(f.s, x, host); err != nil {
				b.Fatal(err)
			}
		}
		sync(b, f.s)
	})
	b.Run("CopyToDevicePinned", func(b *testing.B) {
		x := alloc(b, f.s, make([]float32, 256))
		host, err := cuda.AllocPinned[float32](f.ctx, 256)
		if err != nil {
			b.Fatal(err)
		}
		defer host.Free()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := cuda.CopyToDevice(f.s, x, host); err != nil {
				b.Fatal(err)
			}
			if i%256 == 255 {
				sync(b, f.s)
			}
		}
		sync(b, f.s)
	})
	b.Run("Memset", func(b *testing.B) {
		x := alloc(b, f.s, make([]float32, 256))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := cuda.Memset(f.s, x, 1); err != nil {
				b.Fatal(err)
			}
			if i%256 == 255 {
				sync(b, f.s)
			}
		}
		sync(b, f.s)
	})
	b.Run("HostFunc", func(b *testing.B) {
		fn := func() {}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := f.s.HostFunc(fn); err != nil {
				b.Fatal(err)
			}
			if i%256 == 255 {
				sync(b, f.s)
			}
		}
		sync(b, f.s)
	})
	// A host function on the driver's thread and back, 100 to a Sync (as
	// bench's row "host function in a stream, then a wait each 100"):
	// the entry into Go on the driver's thread is most of it.
	b.Run("HostFuncOnDriverThread", func(b *testing.B) {
		var ran atomic.Int64
		fn := func() { ran.Add(1) }
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := f.s.HostFuncOnDriverThread(fn); err != nil {
				b.Fatal(err)
			}
			if i%100 == 99 {
				sync(b, f.s)
			}
		}
		sync(b, f.s)
		if n := ran.Load(); n != int64(b.N) {
			b.Fatalf("%d of %d host functions ran", n, b.N)
		}
	})
	b.Run("RecordClose", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ev, err := f.s.Record()
			if err != nil {
				b.Fatal(err)
			}
			if err := ev.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLaunchRow measures a launch of sum_i64 with 4 arguments (tools/
// bench's launch rows): package cuda's Stream.Launch with two Slices,
// libcuda's Func.Launch and the generated libcuda.LaunchKernel with the
// same addresses, so that the differences between them are the layers'
// own costs. The launches go into a stream capture, 1000 a graph, which
// the simulator records without waking its stream's worker thread: its
// cuLaunchKernel then costs little, and the same for all three.
func BenchmarkLaunchRow(b *testing.B) {
	f := newFixture(b)
	fn := f.fn(b, "sum_i64")
	in, out := alloc(b, f.s, make([]int64, 1)), alloc(b, f.s, make([]int64, 1))
	one := cuda.Grid(1, 1, 1)
	lone := libcuda.Dim3{X: 1}
	raw := libcuda.Func{}
	m, err := libcuda.LoadModule(kernels.PTX)
	if err == nil {
		defer libcuda.ModuleUnload(m)
		raw, err = m.Function("sum_i64")
	}
	testenv.Must(b, err)
	s := f.s.Raw()
	pin, pout := in.DevicePtr(), out.DevicePtr()
	loop := func(b *testing.B, launch func() error) {
		testenv.OnThread(b, f.ctx.Raw())
		end := func() {
			var g libcuda.Graph
			testenv.Must(b, libcuda.StreamEndCapture(s, &g))
			testenv.Must(b, libcuda.GraphDestroy(g))
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if i%1000 == 0 {
				if i > 0 {
					end()
				}
				testenv.Must(b, libcuda.StreamBeginCapture(s, libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
			}
			if err := launch(); err != nil {
				b.Fatal(err)
			}
		}
		end()
	}
	b.Run("Stream.Launch", func(b *testing.B) {
		loop(b, func() error { return f.s.Launch(fn, one, one, in.Arg(), cuda.Uint64(0), out.Arg(), cuda.Uint64(0)) })
	})
	b.Run("Func.Launch", func(b *testing.B) {
		loop(b, func() error { return raw.Launch(lone, lone, 0, s, pin, uint64(0), pout, uint64(0)) })
	})
	b.Run("LaunchKernel", func(b *testing.B) {
		args := [4]uint64{uint64(pin), 0, uint64(pout), 0}
		params := [4]unsafe.Pointer{unsafe.Pointer(&args[0]), unsafe.Pointer(&args[1]), unsafe.Pointer(&args[2]), unsafe.Pointer(&args[3])}
		loop(b, func() error { return libcuda.LaunchKernel(raw.Handle(), 1, 1, 1, 1, 1, 1, 0, s, &params[0], nil) })
	})
}

// BenchmarkRunCachedSweep measures a sweep of examples/jacobi's loop as
// the sample writes it (RunCached of Zero, a launch of 6 arguments and a
// copy into Pin'ed memory, then Sync), on a goroutine that is not locked
// to its thread, and the same driver calls made directly, as C's loop
// makes them, with cuStreamSynchronize: on the simulator, whose calls
// cost what they cost either way, the difference is the Go layers'.
func BenchmarkRunCachedSweep(b *testing.B) {
	f := newFixture(b)
	fill := f.fn(b, "fill_i32")
	const n = 16
	d := alloc(b, f.s, make([]int32, n))
	d0, err := d.Slice(0, 1)
	testenv.Must(b, err)
	res := make([]int32, 1)
	pinned, err := cuda.Pin(f.ctx, res)
	testenv.Must(b, err)
	b.Cleanup(func() { testenv.MustBounded(b, "pinned.Free", pinned.Free) })
	bg := context.Background()
	b.Run("cuda", func(b *testing.B) {
		c := cuda.NewCached(cuda.DefaultCaptureMode)
		defer c.Close()
		k := int32(0)
		body := func(s *cuda.Stream) error {
			if err := cuda.Zero(s, d); err != nil {
				return err
			}
			if err := s.Launch(fill, cuda.Grid(1, 1, 1), cuda.Block(n, 1, 1), d.Arg(), cuda.Uint64(n), cuda.Int32(k)); err != nil {
				return err
			}
			return cuda.CopyToHost(s, pinned, d0)
		}
		b.ReportAllocs()
		for b.Loop() {
			k++
			if err := f.s.RunCached(c, body); err != nil {
				b.Fatal(err)
			}
			if err := f.s.Sync(bg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("driver calls", func(b *testing.B) {
		testenv.OnThread(b, f.ctx.Raw())
		s, fn := f.s.Raw(), fill.Raw()
		host := unsafe.Pointer(&res[0])
		var e libcuda.GraphExec
		k := int32(0)
		b.ReportAllocs()
		for b.Loop() {
			k++
			p, nn := d.DevicePtr(), uint64(n)
			args := [3]unsafe.Pointer{unsafe.Pointer(&p), unsafe.Pointer(&nn), unsafe.Pointer(&k)}
			var g libcuda.Graph
			err := errors.Join(libcuda.StreamBeginCapture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL),
				libcuda.MemsetD32Async(p, 0, n, s),
				libcuda.LaunchKernel(fn, 1, 1, 1, n, 1, 1, 0, s, &args[0], nil),
				libcuda.MemcpyDtoHAsync(host, p, 4, s),
				libcuda.StreamEndCapture(s, &g))
			if err == nil && e == 0 {
				err = libcuda.GraphInstantiateWithFlags(&e, g, 0)
			} else if err == nil {
				var info libcuda.GraphExecUpdateResultInfo
				err = libcuda.GraphExecUpdate(e, g, &info)
			}
			if err = errors.Join(err, libcuda.GraphDestroy(g), libcuda.GraphLaunch(e, s), libcuda.StreamSynchronize(s)); err != nil {
				b.Fatal(err)
			}
		}
		if e != 0 {
			testenv.Must(b, libcuda.GraphExecDestroy(e))
		}
	})
}
