package graph_test

import (
	"fmt"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// A Cached whose every capture leases the same function through
// LeaseCounted releases the earlier lease at each update, though the
// launch before it still runs (its stream is held at a gate): the later
// lease stands for it, and the update queries and makes no event for it
// (issue 29). The same function through Lease is kept until that launch
// has finished. Either way the last lease goes once the last launch has
// finished and the Cached is closed.
func TestLeaseCountedIsReleasedAtTheUpdate(t *testing.T) {
	testenv.NoErrorsLogged(t)
	for _, counted := range []bool{true, false} {
		t.Run(fmt.Sprintf("counted=%v", counted), func(t *testing.T) {
			testenv.OnPrimary(t, 0)
			drained(t) // no background work of earlier tests queries events meanwhile
			d := deviceInts(t, 16)
			s := testenv.NewStream(t)
			g := testenv.NewGate(t)
			g.Hold(t, s)
			var leased counter
			release := leased.release
			body := func(s libcuda.Stream) error {
				if err := libcuda.MemsetD8Async(d, 1, 64, s); err != nil {
					return err
				}
				ok := false
				if counted {
					ok = graph.LeaseCounted(s, release)
				} else {
					ok = graph.Lease(s, release)
				}
				if !ok {
					return fmt.Errorf("the lease was refused on the capturing stream")
				}
				return nil
			}
			c := graph.NewCached(graph.DefaultMode)
			testenv.Must(t, c.Run(s, body)) // instantiates; its launch waits at the gate
			queries, _ := testenv.Stat(t, "event_queries")
			events, _ := testenv.Stat(t, "live_events")
			const runs = 5
			for i := range runs {
				testenv.Must(t, c.Run(s, body))
				want := 0
				if counted {
					want = i + 1
				}
				if got := leased.get(); got != want {
					t.Fatalf("after update %d with the first launch held: %d leases released, want %d", i+1, got, want)
				}
			}
			if counted {
				if n, ok := testenv.Stat(t, "event_queries"); ok && n != queries {
					t.Errorf("%d event queries in %d updates whose leases stand for the earlier ones; want none", n-queries, runs)
				}
				if n, ok := testenv.Stat(t, "live_events"); ok && n != events {
					t.Errorf("%d events live after the updates, %d before: the updates made events", n, events)
				}
			}
			if got := c.Stats(); got.Updates != runs || got.Instantiations != 1 {
				t.Fatalf("Stats() = %+v, want %d in-place updates after one instantiation", got, runs)
			}
			g.Open()
			testenv.Must(t, libcuda.StreamSynchronize(s))
			testenv.MustBounded(t, "c.Close", c.Close)
			drained(t)
			if got := leased.get(); got != runs+1 {
				t.Fatalf("after the last launch and Close: %d leases released, want %d", got, runs+1)
			}
		})
	}
}
