//go:build !gpu

package hostmem_test

import (
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
	"github.com/purecuda/purecuda/libcuda"
)

// A Buffer.Use inside each capture of a Cached adds no allocation to a
// run (issue 17): the lease's function is made once per buffer, the
// leases are reused, and the update that finds the run before finished
// keeps its tracking event and releases its lease in place. A run
// allocates nothing either way (issue 29; one before, the registration
// in package sync).
func TestUseInsideACaptureAllocatesNothing(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	d := memtest.DeviceInt64(t)
	memtest.Drain(t)
	b, err := hostmem.Wrap(cu, make([]float64, 1))
	testenv.Must(t, err)
	allocs := func(use bool) float64 {
		c := graph.NewCached(graph.DefaultMode)
		body := func(s libcuda.Stream) error {
			if err := libcuda.MemcpyDtoHAsync(b.Pointer(), d, 8, s); err != nil {
				return err
			}
			if use {
				return b.Use(s)
			}
			return nil
		}
		var err error
		run := func() {
			if err == nil {
				err = c.Run(s, body)
			}
			if err == nil {
				err = libcuda.StreamSynchronize(s)
			}
		}
		run()
		run()
		queries := testenv.SimStat(t, "event_queries")
		n := testing.AllocsPerRun(100, run)
		testenv.Must(t, err)
		// The lease of each capture stands for the one before
		// (graph.LeaseCounted): no update queries the launches' event.
		if q := testenv.SimStat(t, "event_queries") - queries; q != 0 {
			t.Errorf("use %v: %d event queries in 101 runs; want none", use, q)
		}
		testenv.MustBounded(t, "c.Close", c.Close)
		// The Close's wait for the last launch (an event query) ends
		// before the next count starts.
		testenv.Must(t, graph.Drain(testenv.Context(t)))
		return n
	}
	with, without := allocs(true), allocs(false)
	t.Logf("allocations a run: %v with the Use, %v without", with, without)
	want := 0.0
	if raceDetector { // sync.Pool drops some of the leases it is given
		want = 1
	}
	if (with > without && !raceDetector) || with > want {
		t.Errorf("a Cached.Run whose capture Use()s the buffer: %v allocations, %v without the Use; want no more, and at most %v", with, without, want)
	}
	testenv.MustBounded(t, "b.Free", b.Free)
	memtest.Drain(t)
}
