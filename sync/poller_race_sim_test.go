//go:build !gpu

package sync_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// A polled wait cancelled just as its work ends has one result, nil or
// context.Canceled, leaves the poller's count of waits at zero (not below:
// the poller ending it and the waiter leaving must not both count it
// out), and no query of its event follows its return (the simulator's
// count of event queries stands still until the poller has stopped).
func TestPolledWaitCancelledAsItsWorkEnds(t *testing.T) {
	testenv.OnPrimary(t, 0)
	c := newCounter(t)
	s := testenv.NewStream(t)
	var ev libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(ev)) })
	b := takeBaseline(t)
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	var finished, cancelled int
	for i := range uint32(rounds) {
		c.hold(t, s, i+1)
		testenv.Must(t, libcuda.EventRecord(ev, s))
		ctx, cancel := context.WithCancel(context.Background())
		res := testenv.WaitAsync(func() error { return toPoller.Event(ctx, ev) })
		testenv.Eventually(t, "the wait on the poller", func() bool { return sync.ReadStats().PolledWaits == 1 })
		if i%2 == 1 {
			// The work ends first; the cancel races the poller's next
			// round, which would see it ended.
			c.reach(i + 1)
			testenv.Eventually(t, "the event to complete", func() bool { return libcuda.EventQuery(ev) == nil })
		}
		start := make(chan struct{})
		opened := testenv.Go(func() { <-start; c.reach(i + 1) })
		left := testenv.Go(func() { <-start; cancel() })
		close(start)
		err := testenv.Recv(t, res, fmt.Sprintf("round %d: the wait cancelled as its work ended", i))
		testenv.Recv(t, opened, "the hold to open")
		testenv.Recv(t, left, "the cancel")
		switch {
		case err == nil:
			finished++
		case errors.Is(err, context.Canceled):
			cancelled++
		default:
			t.Fatalf("round %d: %v, want nil or context.Canceled", i, err)
		}
		queries := testenv.SimStat(t, "event_queries")
		testenv.Eventually(t, "the poller to stop with no wait left", func() bool {
			return !sync.PollerRunning() && sync.ReadStats().PolledWaits == 0
		})
		if n := testenv.SimStat(t, "event_queries"); n != queries {
			t.Fatalf("round %d (%v): %d queries of the event after its wait returned", i, err, n-queries)
		}
	}
	t.Logf("%d rounds: %d finished, %d cancelled", rounds, finished, cancelled)
	b.back(t)
}
