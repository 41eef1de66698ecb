//go:build !gpu

package cuda_test

import (
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv"
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
