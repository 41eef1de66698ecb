//go:build !gpu && (linux || windows)

package graph_test

import (
	"strings"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/libcuda"
)

// An update that succeeds but cannot create the event that tracks the
// launches (the executable graph then keeps its leases for good) is no
// failed update: Cached.Run launches the updated graph, says so in the
// log, and later runs go on as usual.
func TestCachedRunLaunchesAnUpdateWhoseTrackingFailed(t *testing.T) {
	errs := captureErrors(t)
	onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	s := newStream(t)
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	c := graph.NewCached(graph.DefaultMode)
	run := func(v int32) error {
		return c.Run(s, func(s libcuda.Stream) error {
			if !graph.Lease(s, func() {}) {
				t.Error("Lease refused on the capturing stream")
			}
			return k.fillAdd(s, buf, n, v, 0)
		})
	}
	must(t, run(1))
	simFailNext(t, "cuEventCreate", 1, libcuda.CUDA_ERROR_OUT_OF_MEMORY)
	if err := run(2); err != nil {
		t.Fatalf("Run whose update could not track its launches = %v, want nil", err)
	}
	checkInts(t, "after the untracked update", s, buf, host, 2)
	if got, want := c.Stats(), (graph.CacheStats{Runs: 2, Updates: 1, Instantiations: 1}); got != want {
		t.Fatalf("Stats() = %+v, want %+v", got, want)
	}
	msgs := errs.messages()
	if len(msgs) != 1 || !strings.Contains(msgs[0], "kept for good") || !strings.Contains(msgs[0], "CUDA_ERROR_OUT_OF_MEMORY") {
		t.Fatalf("logged %q, want one message that the leases are kept for good, with the error", msgs)
	}
	must(t, run(3))
	checkInts(t, "after a later run", s, buf, host, 3)
	must(t, c.Close())
}
