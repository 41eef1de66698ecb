//go:build !gpu

package cuda_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
)

// A sweep of examples/jacobi's loop (RunCached of a zeroing, a checked
// launch and the copy of the residual into pinned host memory, then a
// Sync) makes the driver calls of C's capture, update and launch
// (baseline.c: the zeroing by cuMemsetD32Async too), one cuCtxGetCurrent
// for RunCached, which makes the stream's context current, and for the
// Sync of the finished stream one cuStreamQuery where C makes one
// cuStreamSynchronize. Zero and CopyToHost inside the run ask for no
// context: the run's thread is locked with it current (issue 44: they
// asked one each before, and Zero's memset was cuMemsetD8Async). With the
// residual in memory of hostmem.Alloc or in a Go slice (Pin), the same:
// the copy's Use leases the memory to the capture with no driver call. It
// made 4 more before issue 29: cuStreamGetCtx, cuCtxGetCurrent and
// cuStreamGetCaptureInfo in graph.Cached.Run, and the lease's
// cuStreamGetCaptureInfo. No sweep allocates beyond what the Use of a
// buffer costs (none), and neither does the Sync.
func TestRunCachedSweepMakesTheDriverCallsOfCsLoop(t *testing.T) {
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	// As C's loop: the context current on the loop's thread, which a Go
	// program's goroutine may leave between calls (then a call of package
	// cuda makes it current and the thread's own current again after: two
	// more).
	testenv.OnThread(t, f.ctx.Raw())
	fill := f.fn(t, "fill_i32")
	const n = 64
	d := alloc(t, f.s, make([]int32, n))
	d0, err := d.Slice(0, 1)
	testenv.Must(t, err)
	allocated, err := hostmem.Alloc(f.ctx.Raw(), 4)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "allocated.Free", allocated.Free) })
	fromAlloc, err := cuda.PinnedFrom[int32](allocated)
	testenv.Must(t, err)
	pinned, err := cuda.Pin(f.ctx, make([]int32, 1))
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "pinned.Free", pinned.Free) })
	want := testenv.CSweepCalls()
	delete(want, "cuMemsetD8Async") // testenv's sweep zeroes bytes; C's, and Zero, words
	want["cuMemsetD32Async"] = 1
	want["cuCtxGetCurrent"] = 1
	for _, tc := range []struct {
		way  string
		host *cuda.Pinned[int32]
	}{
		{"memory of hostmem.Alloc", fromAlloc},
		{"a Go slice, Pin", pinned},
	} {
		c := cuda.NewCached(cuda.DefaultCaptureMode)
		k := int32(0)
		body := func(s *cuda.Stream) error {
			if err := cuda.Zero(s, d); err != nil {
				return err
			}
			if err := s.Launch(fill, cuda.Grid(1, 1, 1), cuda.Block(n, 1, 1), d.Arg(), cuda.Uint64(n), cuda.Int32(k)); err != nil {
				return err
			}
			return cuda.CopyToHost(s, tc.host, d0)
		}
		calls := map[string]int64{}
		var allocs uint64
		var ms runtime.MemStats
		sweep := func(count bool) {
			k++
			run := func() { testenv.Must(t, f.s.RunCached(c, body)) }
			if count {
				for name, n := range testenv.CountThreadCalls(t, run) {
					calls[name] += n
				}
			} else {
				runtime.ReadMemStats(&ms)
				before := ms.Mallocs
				run()
				runtime.ReadMemStats(&ms)
				allocs += ms.Mallocs - before
			}
			sync(t, f.s) // not counted: sync.Stream's queries depend on timing
			if got := tc.host.Data()[0]; got != k {
				t.Fatalf("%s: sweep %d copied %d to the host", tc.way, k, got)
			}
		}
		sweep(false) // instantiates
		sweep(false) // the first update
		// The calls counted are the process's: the background work of the
		// case before (its graph's release) ends first.
		testenv.Must(t, graph.Drain(testenv.Context(t)))
		testenv.Must(t, hostmem.Drain(testenv.Context(t)))
		const sweeps = 20
		for range sweeps {
			sweep(true)
		}
		if got, want := testenv.CallsPer(calls, sweeps), testenv.CallsPer(want, 1); got != want {
			t.Errorf("%s: driver calls a RunCached:\n%s\nwant\n%s", tc.way, got, want)
		}
		allocs = 0
		for range sweeps {
			sweep(false)
		}
		want := 0.0
		if raceEnabled { // sync.Pool drops some of the leases it is given
			want = 1
		}
		// As testing.AllocsPerRun counts: whole allocations a run, so that
		// another goroutine's odd one does not count as the sweep's.
		if perRun := float64(allocs / sweeps); perRun > want {
			t.Errorf("%s: %v allocations a RunCached, want at most %v", tc.way, perRun, want)
		}
		// The wait that ends each sweep, on the stream finished by now
		// (sync above): one query, as C's one cuStreamSynchronize, and no
		// allocation.
		bg := context.Background()
		syncCalls := testenv.CountThreadCalls(t, func() { testenv.Must(t, f.s.Sync(bg)) })
		if got, want := testenv.CallsPer(syncCalls, 1), testenv.CallsPer(map[string]int64{"cuStreamQuery": 1}, 1); got != want {
			t.Errorf("%s: driver calls of the Sync of a finished stream:\n%s\nwant\n%s", tc.way, got, want)
		}
		if n := testing.AllocsPerRun(sweeps, func() { testenv.Must(t, f.s.Sync(bg)) }); n != 0 {
			t.Errorf("%s: %v allocations a Sync of a finished stream, want 0", tc.way, n)
		}
		testenv.MustBounded(t, "c.Close", c.Close)
	}
}
