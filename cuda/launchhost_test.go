package cuda_test

import (
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// heldStream keeps a stream's kernels from running while a benchmark
// launches them: the stream waits (cuStreamWaitValue32) for a word of
// mapped host memory to reach the number of the current batch, so that
// on the simulator a launch costs its driver call alone (queueing the
// kernel) and no kernel runs beside the launching thread. Between
// batches the word is written, the stream drained and held again, with
// the benchmark's timer stopped.
type heldStream struct {
	f    *fixture
	host unsafe.Pointer
	dev  libcuda.Deviceptr
	n    uint32 // the batch the stream waits for
}

func holdStream(b *testing.B, f *fixture) *heldStream {
	h := &heldStream{f: f}
	testenv.Must(b, f.ctx.Do(func() error {
		if err := libcuda.MemHostAlloc(&h.host, 64, uint32(libcuda.CU_MEMHOSTALLOC_DEVICEMAP)); err != nil {
			return err
		}
		return libcuda.MemHostGetDevicePointer(&h.dev, h.host, 0)
	}))
	b.Cleanup(func() {
		h.release(b)
		testenv.Must(b, f.ctx.Do(func() error { return libcuda.MemFreeHost(h.host) }))
	})
	h.hold(b)
	return h
}

func (h *heldStream) hold(b *testing.B) {
	h.n++
	testenv.Must(b, h.f.ctx.Do(func() error {
		return libcuda.StreamWaitValue32(h.f.s.Raw(), h.dev, h.n, uint32(libcuda.CU_STREAM_WAIT_VALUE_GEQ))
	}))
}

func (h *heldStream) release(b *testing.B) {
	atomic.StoreUint32((*uint32)(h.host), h.n)
	sync(b, h.f.s)
}

// cycle drains the stream and holds it again every 1024 launches,
// outside the timer.
func (h *heldStream) cycle(b *testing.B, i int) {
	if i%1024 == 1023 {
		b.StopTimer()
		h.release(b)
		h.hold(b)
		b.StartTimer()
	}
}

// BenchmarkLaunchHost is the host cost of one launch, the stream held so
// that no kernel runs (see heldStream): on the simulator the driver call
// is cheap, so what package cuda adds to it shows. raw is
// libcuda.LaunchKernel with the arguments made once; the others launch
// through Stream.Launch with their arguments written in the call, each
// with one check or record more or less than saxpy (two Slices and two
// scalars, extern "C": checked by size, the Slices ordered and recorded).
func BenchmarkLaunchHost(b *testing.B) {
	const n = 256
	b.Run("raw", func(b *testing.B) {
		f := newFixture(b)
		x := alloc(b, f.s, make([]float32, n))
		y := alloc(b, f.s, make([]float32, n))
		saxpy := f.fn(b, "saxpy").Raw()
		raw := f.s.Raw()
		nn, a, px, py := int32(n), float32(2), x.DevicePtr(), y.DevicePtr()
		params := [4]unsafePointer{ptr(&nn), ptr(&a), ptr(&px), ptr(&py)}
		h := holdStream(b, f)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := libcuda.LaunchKernel(saxpy, 1, 1, 1, 256, 1, 1, 0, raw, &params[0], nil); err != nil {
				b.Fatal(err)
			}
			h.cycle(b, i)
		}
	})
	b.Run("libcuda.Func.Launch", func(b *testing.B) {
		f := newFixture(b)
		x := alloc(b, f.s, make([]float32, n))
		y := alloc(b, f.s, make([]float32, n))
		var fn libcuda.Func
		testenv.Must(b, f.ctx.Do(func() error {
			m, err := libcuda.LoadModule(kernels.PTX)
			if err != nil {
				return err
			}
			b.Cleanup(func() { testenv.Must(b, f.ctx.Do(func() error { return libcuda.ModuleUnload(m) })) })
			fn, err = m.Function("saxpy")
			return err
		}))
		raw := f.s.Raw()
		px, py := x.DevicePtr(), y.DevicePtr()
		h := holdStream(b, f)
		one, block := libcuda.Dim3{X: 1}, libcuda.Dim3{X: 256}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := fn.Launch(one, block, 0, raw, int32(n), float32(2), px, py); err != nil {
				b.Fatal(err)
			}
			h.cycle(b, i)
		}
	})
	launch := func(name string, kernel func(*fixture) *cuda.Func, opts []cuda.StreamOption, do func(s *cuda.Stream, fn *cuda.Func, g, bl cuda.Dim3, x, y cuda.Slice[float32]) error) {
		b.Run(name, func(b *testing.B) {
			f := newFixture(b)
			if opts != nil {
				f.s = newStream(b, f.ctx, opts...)
			}
			x := alloc(b, f.s, make([]float32, n))
			y := alloc(b, f.s, make([]float32, n))
			fn := kernel(f)
			h := holdStream(b, f)
			g, bl := cuda.Grid(1, 1, 1), cuda.Block(256, 1, 1)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := do(f.s, fn, g, bl, x, y); err != nil {
					b.Fatal(err)
				}
				h.cycle(b, i)
			}
		})
	}
	// Each writes its arguments in the call, as a user does.
	saxpy := func(s *cuda.Stream, fn *cuda.Func, g, bl cuda.Dim3, x, y cuda.Slice[float32]) error {
		return s.Launch(fn, g, bl, cuda.Int32(n), cuda.Float32(2), x.Arg(), y.Arg())
	}
	saxpyFn := func(f *fixture) *cuda.Func { return f.fn(b, "saxpy") }
	launch("cuda.saxpy", saxpyFn, nil, saxpy)
	launch("cuda.saxpy,unordered", saxpyFn, []cuda.StreamOption{cuda.Unordered()}, saxpy)
	launch("cuda.saxpy,raw-pointers", saxpyFn, nil, func(s *cuda.Stream, fn *cuda.Func, g, bl cuda.Dim3, x, y cuda.Slice[float32]) error {
		return s.Launch(fn, g, bl, cuda.Int32(n), cuda.Float32(2), cuda.Ptr(x.DevicePtr()), cuda.Ptr(y.DevicePtr()))
	})
	// axpy(float, const float*, float*, int): C++, checked by type.
	axpy := func(f *fixture) *cuda.Func { return typedFunc(b, typedModule(b, f.ctx), "axpy") }
	launch("cuda.axpy,typed", axpy, nil, func(s *cuda.Stream, fn *cuda.Func, g, bl cuda.Dim3, x, y cuda.Slice[float32]) error {
		return s.Launch(fn, g, bl, cuda.Float32(2), x.Arg(), y.Arg(), cuda.Int32(n))
	})
}
