//go:build !gpu

package cuda_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// liveAllocationsStay checks that the simulator's count of live
// allocations stays at want for a moment: a free that is not ordered
// after held work would run at once on an idle stream, and this gives it
// the time to show (as testenv.StillWaiting does; a loaded machine can
// only make the check miss a fault).
func liveAllocationsStay(t testing.TB, want int64, while string) {
	t.Helper()
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if n := testenv.SimStat(t, "live_allocations"); n != want {
			t.Fatalf("%d live allocations while %s, want %d", n, while, want)
		}
	}
}

// beginFence holds busy at fence and begins a device-wide fence behind it:
// a cuMemFree in context cu on another thread, which waits for busy and
// holds other threads' submissions meanwhile, as a driver's does. It
// returns once the fence has begun, with the cuMemFree's result to come
// after fence.Open.
func beginFence(t *testing.T, cu libcuda.Context, fence *testenv.Gate, busy *cuda.Stream) <-chan error {
	t.Helper()
	fence.Hold(t, busy.Raw())
	var d libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&d, 64))
	fences := testenv.SimStat(t, "fences")
	freed := testenv.WaitAsync(func() error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := libcuda.CtxSetCurrent(cu); err != nil {
			return err
		}
		return libcuda.MemFree(d) // waits for busy; holds submissions meanwhile
	})
	testenv.WaitStat(t, "the fence to begin", "fences", fences)
	return freed
}
