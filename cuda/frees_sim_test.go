//go:build !gpu

package cuda_test

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
)

// liveAllocations is the simulator's count of live device allocations.
func liveAllocations(t testing.TB) int64 { return testenv.SimStat(t, "live_allocations") }

// waitAllocations waits until the live allocations are n again: the
// background frees (managed memory's) have run, so that the tests after
// count from a settled figure.
func waitAllocations(t testing.TB, n int64) {
	t.Helper()
	testenv.Eventually(t, "the background frees", func() bool { return liveAllocations(t) == n })
}
