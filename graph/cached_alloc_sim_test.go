//go:build !gpu

package graph_test

import (
	"errors"
	"runtime"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// Cached.Run of an unchanged capture allocates nothing (issue 29; issue
// 17 brought it to one a run, and nothing per kernel): no Graph for a
// graph that Run destroys, one capture record per Cached with its
// registration in package sync reused (sync.StartCaptureWith), leases
// made only when something is leased and pooled. The kernels are launched through cuLaunchKernel with arguments
// made once, so that the allocations counted are Run's. The same holds
// when each capture leases (the lease function made once), the run before
// having finished by the time of the update.
func TestCachedRunAllocations(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n, kernels = 256, 100
	s := testenv.NewStream(t)
	buf := deviceInts(t, n)
	args := &struct {
		buf    libcuda.Deviceptr
		n      uint64
		params [2]unsafe.Pointer
	}{buf: buf, n: n}
	args.params = [2]unsafe.Pointer{unsafe.Pointer(&args.buf), unsafe.Pointer(&args.n)}
	var pin runtime.Pinner
	pin.Pin(args)
	defer pin.Unpin()
	var leased counter
	release := leased.release
	for _, lease := range []bool{false, true} {
		name := "no lease"
		if lease {
			name = "a lease a run"
		}
		body := func(s libcuda.Stream) error {
			if lease && !graph.Lease(s, release) {
				return errors.New("Lease refused on the capturing stream")
			}
			for range kernels {
				if err := libcuda.LaunchKernel(k.addOne.Handle(), 1, 1, 1, n, 1, 1, 0, s, &args.params[0], nil); err != nil {
					return err
				}
			}
			return nil
		}
		c := graph.NewCached(graph.DefaultMode)
		var err error
		run := func() {
			if err == nil {
				err = c.Run(s, body)
			}
			if err == nil {
				err = libcuda.StreamSynchronize(s)
			}
		}
		run() // instantiates
		run() // the first update
		const runs = 100
		allocs := testing.AllocsPerRun(runs, run)
		testenv.Must(t, err)
		t.Logf("%s: %v allocations a run", name, allocs)
		want := 0.0
		if raceDetector { // sync.Pool drops some of the leases it is given
			want = 1
		}
		if allocs > want {
			t.Errorf("%s: %v allocations a Cached.Run of %d kernels, want at most %v", name, allocs, kernels, want)
		}
		if got, want := c.Stats(), (graph.CacheStats{Runs: runs + 3, Updates: runs + 2, Instantiations: 1}); got != want {
			t.Errorf("%s: Stats() = %+v, want %+v", name, got, want)
		}
		testenv.MustBounded(t, "c.Close", c.Close)
	}
	drained(t)
	if got, want := leased.get(), 100+3; got != want {
		t.Fatalf("%d leases released, want %d", got, want)
	}
}
