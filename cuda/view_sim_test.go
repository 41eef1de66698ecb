//go:build !gpu

package cuda_test

import (
	"runtime"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// A view keeps the allocation alive when every Slice of the original is
// dropped; once the view is dropped too, the garbage collector frees it.
func TestViewKeepsTheAllocationAlive(t *testing.T) {
	f := newFixture(t)
	base := testenv.SimStat(t, "live_allocations")
	func() {
		v := func() cuda.Slice[int32] {
			x, err := cuda.Alloc[float32](f.s, 64)
			testenv.Must(t, err)
			v, err := cuda.ViewAt[int32](x, 128, 8)
			testenv.Must(t, err)
			return v
		}()
		for range 3 {
			runtime.GC()
		}
		sync(t, f.s)
		// Freed, the memory would be out of the simulator's reach: the
		// memset would be an illegal address.
		testenv.Must(t, cuda.Memset(f.s, v, 7))
		if got := read(t, f.s, v); got[7] != 7 {
			t.Errorf("the view reads %v, want 7s", got)
		}
	}()
	testenv.Eventually(t, "the dropped allocation to be freed", func() bool {
		runtime.GC()
		return testenv.SimStat(t, "live_allocations") <= base
	})
}

// A Foreign Slice dropped without Free is released by the garbage
// collector: its release function runs once.
func TestDroppedForeignSliceIsReleased(t *testing.T) {
	f := newFixture(t)
	p, release, released := memAlloc(t, f.ctx, 256)
	func() {
		x, err := cuda.Foreign[float32](f.ctx, p, 64, release)
		testenv.Must(t, err)
		testenv.Must(t, cuda.Zero(f.s, x))
	}()
	sync(t, f.s)
	done, stop := make(chan error, 1), make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case err := <-released:
				done <- err
				return
			case <-stop:
				return
			default:
				runtime.GC()
				runtime.Gosched()
			}
		}
	}()
	testenv.Finished(t, "the release of a dropped Foreign Slice", done)
}
