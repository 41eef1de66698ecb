package cuda_test

import (
	"flag"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
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
// batches the word is written, the stream drained and held again.
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
	// The caller frees it (free) once every held stream is released:
	// cuMemFreeHost waits for all work on the device.
	b.Cleanup(func() { h.release(b) })
	h.hold(b)
	return h
}

func (h *heldStream) free(b *testing.B) {
	testenv.Must(b, h.f.ctx.Do(func() error { return libcuda.MemFreeHost(h.host) }))
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

// evictKB, when set, has each launch of BenchmarkLaunchHost followed by
// writes to that many KiB of memory, one word a cache line: a stand-in for
// the real driver's own work in a launch (microseconds), which leaves
// little of the launching code's data in the nearest caches. raw pays it
// too: compare the differences.
var evictKB = flag.Int("launchhost.evict", 0, "KiB of memory BenchmarkLaunchHost writes after each launch")

var evictBuf []uint64

func evict() {
	if *evictKB == 0 {
		return
	}
	if len(evictBuf) != *evictKB*128 {
		evictBuf = make([]uint64, *evictKB*128)
	}
	for i := 0; i < len(evictBuf); i += 8 {
		evictBuf[i]++
	}
}

// BenchmarkLaunchHost is what a launch through package cuda costs the
// host beyond the driver call itself: each way launches saxpy-shaped
// kernels in rounds of 256 on a held stream (see heldStream), in turns
// with rounds of libcuda.LaunchKernel with arguments made once (raw), and
// reports the median over 101 pairs of rounds of the difference a launch
// (extra-ns) and of the ratio. On the simulator the driver call is cheap,
// so the Go side shows. The ways: libcuda's Func.Launch; Stream.Launch of
// saxpy (two Slices and two scalars, extern "C": checked by size, the
// Slices ordered and recorded), on an Unordered stream, with raw
// pointers in place of the Slices, and of the C++ axpy (checked by type).
// Run it once: go test ./cuda -run '^$' -bench LaunchHost -benchtime 1x.
func BenchmarkLaunchHost(b *testing.B) {
	const n, perRound, pairs = 256, 256, 101
	f := newFixture(b)
	unordered := newStream(b, f.ctx, cuda.Unordered())
	x := alloc(b, f.s, make([]float32, n))
	y := alloc(b, f.s, make([]float32, n))
	ux := alloc(b, unordered, make([]float32, n))
	uy := alloc(b, unordered, make([]float32, n))
	saxpy := f.fn(b, "saxpy")
	axpy := typedFunc(b, typedModule(b, f.ctx), "axpy")
	var lfn libcuda.Func
	testenv.Must(b, f.ctx.Do(func() error {
		m, err := libcuda.LoadModule(kernels.PTX)
		if err != nil {
			return err
		}
		b.Cleanup(func() { testenv.Must(b, f.ctx.Do(func() error { return libcuda.ModuleUnload(m) })) })
		lfn, err = m.Function("saxpy")
		return err
	}))
	g, bl := cuda.Grid(1, 1, 1), cuda.Block(256, 1, 1)
	one, block := libcuda.Dim3{X: 1}, libcuda.Dim3{X: 256}
	px, py := x.DevicePtr(), y.DevicePtr()
	nn, a := int32(n), float32(2)
	params := [4]unsafePointer{ptr(&nn), ptr(&a), ptr(&px), ptr(&py)}
	// Each way launches k times on s, its arguments written in the call
	// as a user writes them.
	type way struct {
		name   string
		s      *cuda.Stream
		launch func(s *cuda.Stream, k int) error
	}
	raw := way{"raw", f.s, func(s *cuda.Stream, k int) error {
		for range k {
			if err := libcuda.LaunchKernel(saxpy.Raw(), 1, 1, 1, 256, 1, 1, 0, s.Raw(), &params[0], nil); err != nil {
				return err
			}
			evict()
		}
		return nil
	}}
	ways := []way{
		{"libcuda.Func.Launch", f.s, func(s *cuda.Stream, k int) error {
			for range k {
				if err := lfn.Launch(one, block, 0, s.Raw(), int32(n), float32(2), px, py); err != nil {
					return err
				}
				evict()
			}
			return nil
		}},
		{"cuda.saxpy", f.s, func(s *cuda.Stream, k int) error {
			for range k {
				if err := s.Launch(saxpy, g, bl, cuda.Int32(n), cuda.Float32(2), x.Arg(), y.Arg()); err != nil {
					return err
				}
				evict()
			}
			return nil
		}},
		{"cuda.saxpy,unordered", unordered, func(s *cuda.Stream, k int) error {
			for range k {
				if err := s.Launch(saxpy, g, bl, cuda.Int32(n), cuda.Float32(2), ux.Arg(), uy.Arg()); err != nil {
					return err
				}
				evict()
			}
			return nil
		}},
		{"cuda.saxpy,raw-pointers", f.s, func(s *cuda.Stream, k int) error {
			for range k {
				if err := s.Launch(saxpy, g, bl, cuda.Int32(n), cuda.Float32(2), cuda.Ptr(px), cuda.Ptr(py)); err != nil {
					return err
				}
				evict()
			}
			return nil
		}},
		{"cuda.axpy,typed", f.s, func(s *cuda.Stream, k int) error {
			for range k {
				// axpy(float, const float*, float*, int): C++, checked by type.
				if err := s.Launch(axpy, g, bl, cuda.Float32(2), x.Arg(), y.Arg(), cuda.Int32(n)); err != nil {
					return err
				}
				evict()
			}
			return nil
		}},
	}
	held := map[*cuda.Stream]*heldStream{}
	b.Cleanup(func() { // last: after the holds' cleanups released the streams
		for _, h := range held {
			h.free(b)
		}
	})
	var ms runtime.MemStats
	// timed runs one round of w and returns its time and allocations a
	// launch; the release and hold around it are not counted.
	timed := func(w way) (ns, allocs float64) {
		h := held[w.s]
		if h == nil {
			h = holdStream(b, &fixture{ctx: f.ctx, s: w.s})
			held[w.s] = h
		}
		runtime.ReadMemStats(&ms)
		m0 := ms.Mallocs
		t0 := time.Now()
		testenv.Must(b, w.launch(w.s, perRound))
		ns = float64(time.Since(t0).Nanoseconds()) / perRound
		runtime.ReadMemStats(&ms)
		allocs = float64(ms.Mallocs-m0) / perRound
		h.release(b)
		h.hold(b)
		return ns, allocs
	}
	for _, w := range ways {
		b.Run(w.name, func(b *testing.B) {
			timed(w) // once each first
			timed(raw)
			var diffs, ratios []float64
			var allocs float64
			for i := range pairs {
				var tr float64
				if i%2 == 1 {
					tr, _ = timed(raw)
				}
				tw, a := timed(w)
				allocs += a
				if i%2 == 0 {
					tr, _ = timed(raw)
				}
				diffs, ratios = append(diffs, tw-tr), append(ratios, tw/tr)
			}
			slices.Sort(diffs)
			slices.Sort(ratios)
			b.ReportMetric(diffs[pairs/2], "extra-ns/launch")
			b.ReportMetric(ratios[pairs/2], "ratio")
			b.ReportMetric(allocs/pairs, "allocs/launch")
		})
	}
}
