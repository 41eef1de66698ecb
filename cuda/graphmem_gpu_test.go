//go:build gpu

package cuda_test

import (
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// On the GPU: a graph that allocates 4 MiB, fills it, adds one, copies it
// out and frees it, launched 500 times, gives the right result each time;
// the device's graph memory holds the allocation's chunk meanwhile and
// gives it back on a trim once the executable graph is gone.
func TestGPUGraphAllocLaunchedManyTimes(t *testing.T) {
	f := newFixture(t)
	const n = 1 << 20
	fill, addOne := f.fn(t, "fill_i32"), f.fn(t, "add_one_i32")
	out := alloc(t, f.s, make([]int32, n))
	g, err := f.s.Capture(func(s *cuda.Stream) error {
		tmp, err := cuda.Alloc[int32](s, n)
		if err != nil {
			return err
		}
		if err := launch1D(t, s, fill, n, tmp.Arg(), cuda.Uint64(n), cuda.Int32(41)); err != nil {
			return err
		}
		if err := launch1D(t, s, addOne, n, tmp.Arg(), cuda.Uint64(n)); err != nil {
			return err
		}
		if err := cuda.Copy(s, out, tmp); err != nil {
			return err
		}
		return tmp.Free()
	})
	testenv.Must(t, err)
	defer func() { testenv.Must(t, g.Destroy()) }()
	x, err := g.Instantiate()
	testenv.Must(t, err)
	for i := range 500 {
		if i%100 == 0 {
			testenv.Must(t, cuda.Zero(f.s, out))
		}
		testenv.Must(t, f.s.LaunchGraph(x))
		if i%100 == 0 {
			got := read(t, f.s, out)
			if got[0] != 42 || got[n-1] != 42 {
				t.Fatalf("launch %d: out[0] = %d, out[n-1] = %d, want 42", i, got[0], got[n-1])
			}
		}
	}
	sync(t, f.s)
	dev := f.ctx.Device()
	before, err := dev.GraphMem()
	testenv.Must(t, err)
	if before.ReservedHigh < 4*n {
		t.Errorf("graph memory while the graph was launched: %+v, want at least %d bytes reserved at the high-water mark", before, 4*n)
	}
	testenv.Must(t, x.Destroy())
	testenv.Must(t, dev.GraphMemTrim())
	after, err := dev.GraphMem()
	testenv.Must(t, err)
	t.Logf("graph memory after 500 launches: %+v; after destroying the executable graph and a trim: %+v", before, after)
	if after.Reserved > before.Reserved || after.Used != 0 {
		t.Errorf("after the trim: %+v, from %+v", after, before)
	}
}

// On the GPU: an outliving allocation of 4 MiB in a graph instantiated
// with InstantiateAutoFree stays at its address for 100 launches, and
// holds each launch's result.
func TestGPUGraphAllocStableAcrossAutoFreeLaunches(t *testing.T) {
	f := newFixture(t)
	const n = 1 << 20
	in := alloc(t, f.s, make([]int32, n))
	g, y := captureOutliving(t, f, in)
	addr := y.DevicePtr()
	x, err := g.InstantiateAutoFree()
	testenv.Must(t, err)
	defer func() { testenv.Must(t, x.Destroy()) }()
	for i := range int32(100) {
		testenv.Must(t, cuda.Memset(f.s, in, i))
		testenv.Must(t, f.s.LaunchGraph(x))
		if i%10 == 0 {
			got := read(t, f.s, y)
			if got[0] != i+1 || got[n-1] != i+1 {
				t.Fatalf("launch %d: y[0] = %d, y[n-1] = %d, want %d", i, got[0], got[n-1], i+1)
			}
		}
		if y.DevicePtr() != addr {
			t.Fatalf("launch %d: the Slice moved from %#x to %#x", i, addr, y.DevicePtr())
		}
	}
	testenv.Must(t, y.Free())
	sync(t, f.s)
}

// On the GPU: 16 MiB from libcuda.MemAlloc wrapped as Foreign and carved
// into a float32 and an int32 view: saxpy on one stream, add_one on
// another, reads on a third, all ordered without an Event; Free releases
// it after that work.
func TestGPUForeignArenaAcrossStreams(t *testing.T) {
	f := newFixture(t)
	s2 := newStream(t, f.ctx, cuda.NonBlocking())
	s3 := newStream(t, f.ctx, cuda.NonBlocking())
	const n = 1 << 20
	p, release, released := memAlloc(t, f.ctx, 16*n)
	arena, err := cuda.Foreign[byte](f.ctx, p, 16*n, release)
	testenv.Must(t, err)
	xs, err := cuda.ViewAt[float32](arena, 0, n)
	testenv.Must(t, err)
	ys, err := cuda.ViewAt[float32](arena, 4*n, n)
	testenv.Must(t, err)
	is, err := cuda.ViewAt[int32](arena, 8*n, n)
	testenv.Must(t, err)
	testenv.Must(t, cuda.CopyToDevice(f.s, xs, seq(n, func(i int) float32 { return float32(i % 1000) })))
	testenv.Must(t, cuda.Memset(f.s, ys, 1))
	testenv.Must(t, cuda.Memset(f.s, is, 6))
	testenv.Must(t, launch1D(t, s2, f.fn(t, "saxpy"), n, cuda.Int32(n), cuda.Float32(2), xs.Arg(), ys.Arg()))
	testenv.Must(t, launch1D(t, f.s, f.fn(t, "add_one_i32"), n, is.Arg(), cuda.Uint64(n)))
	gotY, gotI := make([]float32, n), make([]int32, n)
	testenv.Must(t, cuda.CopyToHost(s3, gotY, ys))
	testenv.Must(t, cuda.CopyToHost(s3, gotI, is))
	sync(t, s3)
	for _, i := range []int{0, 1, 999, n - 1} {
		if want := 2*float32(i%1000) + 1; gotY[i] != want {
			t.Errorf("y[%d] = %v, want %v", i, gotY[i], want)
		}
	}
	if !slices.Equal(gotI[:4], []int32{7, 7, 7, 7}) || gotI[n-1] != 7 {
		t.Errorf("ints %v ... %d, want 7s", gotI[:4], gotI[n-1])
	}
	testenv.Must(t, arena.Free())
	testenv.Finished(t, "the release of the Foreign arena", released)
}
