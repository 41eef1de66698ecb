//go:build !gpu && (linux || windows)

package graph_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// leaseProbe is the lease of one run: how often it was released, and
// whether the run's launch had copied its word by the first release.
type leaseProbe struct {
	released atomic.Int32
	sawWord  atomic.Int32 // the word at the first release, +1 (0: not released)
}

// Each driver call on the way of a Cached.Run fails in turn, in a run
// made while the run before it is held behind a gate. Whatever fails,
// every lease is released at most once, never before the launch that
// uses it has run (its run's word, which the launch copies, is there by
// then), exactly once when its graph can be tracked, and never when the
// failure leaves a graph that may still run but cannot be tracked; the
// Cached goes on working after.
func TestCachedRunFailuresReleaseEachLeaseOnceAndNeverEarly(t *testing.T) {
	// By design a failed cuGraphDestroy or cuGraphExecDestroy keeps its graph for good: the test runs in a child
	// process, which ends with them, so that the leak check after the
	// package's tests (testenv.Main) stays exact.
	if !testenv.InChild(t) {
		return
	}
	testenv.CaptureErrors(t) // the failures are logged; quiet here
	cu := testenv.OnPrimary(t, 0)
	const (
		once = 1 // released once, after its launch (if any) has run
		kept = 0 // never released: a graph that may run cannot be tracked
	)
	cases := []struct {
		call     string
		topology bool // the failing run's graph has another topology
		held     bool // its run before is held (else it has finished)
		// What becomes of the leases of the run before (a), the failing
		// run (b) and a run after it (c).
		a, b, c int
	}{
		{call: "cuStreamEndCapture", held: true, a: once, b: once, c: once},
		{call: "cuGraphExecUpdate", held: true, a: once, b: once, c: once},
		{call: "cuEventQuery", held: false, a: once, b: once, c: once},
		{call: "cuEventCreate", held: true, a: once, b: kept, c: kept},
		{call: "cuGraphLaunch", held: true, a: once, b: once, c: once},
		{call: "cuGraphLaunch", held: false, a: once, b: once, c: once},
		// The launch before is settled at the update: a failed record
		// of its event leaves a wait for the whole context.
		{call: "cuEventRecord", held: true, a: once, b: once, c: once},
		{call: "cuGraphDestroy", held: true, a: once, b: kept, c: once},
		{call: "cuGraphInstantiateWithFlags", topology: true, held: true, a: once, b: once, c: once},
		{call: "cuGraphExecDestroy", topology: true, held: true, a: kept, b: once, c: once},
	}
	for _, tc := range cases {
		name := fmt.Sprintf("%s, topology changed %v, run before held %v", tc.call, tc.topology, tc.held)
		s := testenv.NewStream(t)
		one := deviceInts(t, 1)
		testenv.Must(t, libcuda.MemsetD32(one, 1, 1))
		words := pinnedInts(t, 3)
		var probes [3]leaseProbe
		c := graph.NewCached(graph.DefaultMode)
		run := func(k, copies int) error {
			return c.Run(s, func(s libcuda.Stream) error {
				p := &probes[k]
				graph.Lease(s, func() {
					if p.released.Add(1) == 1 {
						p.sawWord.Store(atomic.LoadInt32(&words[k]) + 1)
					}
				})
				for range copies {
					if err := libcuda.MemcpyDtoHAsync(unsafe.Pointer(&words[k]), one, 4, s); err != nil {
						return err
					}
				}
				return nil
			})
		}
		gt := testenv.NewGate(t)
		gt.Hold(t, s)
		testenv.Must(t, run(0, 1))
		if !tc.held {
			gt.Open()
			testenv.Must(t, sync.Stream(testenv.Context(t), cu, s))
		}
		copies := 1
		if tc.topology {
			copies = 2
		}
		testenv.SimFailNext(t, tc.call, 1, injected)
		err := run(1, copies)
		testenv.SimFailNext(t, tc.call, 0, 0)
		t.Logf("%s: Run = %v", name, err)
		gt.Open()
		testenv.Must(t, sync.Stream(testenv.Context(t), cu, s))
		drained(t)
		testenv.Must(t, run(2, copies))
		testenv.Must(t, sync.Stream(testenv.Context(t), cu, s))
		testenv.MustBounded(t, "c.Close", c.Close)
		drained(t)
		for k, want := range []int{tc.a, tc.b, tc.c} {
			p := &probes[k]
			if got := int(p.released.Load()); got != want {
				t.Errorf("%s: run %d's lease released %d times, want %d", name, k, got, want)
			}
			if launched := atomic.LoadInt32(&words[k]) == 1; launched && p.sawWord.Load() == 1 {
				t.Errorf("%s: run %d's lease was released before its launch had run", name, k)
			}
		}
	}
}
