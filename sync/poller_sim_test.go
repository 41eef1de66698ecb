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

// Once a polled wait has returned cancelled, the poller queries its target
// no more (the caller may destroy it): the simulator's count of event
// queries stands still from then on.
func TestCancelledPolledWaitIsQueriedNoMore(t *testing.T) {
	testenv.OnPrimary(t, 0)
	g := testenv.NewGate(t)
	s := testenv.NewStream(t)
	g.Hold(t, s)
	var ev libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(ev)) })
	testenv.Must(t, libcuda.EventRecord(ev, s))
	for i := range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		res := testenv.WaitAsync(func() error { return sync.Policy{Mode: sync.Polling}.Event(ctx, ev) })
		testenv.Eventually(t, "the wait on the poller", func() bool { return sync.ReadStats().PolledWaits == 1 })
		r0, _ := sync.PollerCounts()
		testenv.Eventually(t, "a poller round", func() bool { r, _ := sync.PollerCounts(); return r > r0 })
		cancel()
		if err := testenv.Recv(t, res, "the cancelled wait"); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled wait %d: %v", i, err)
		}
		queries := testenv.SimStat(t, "event_queries")
		testenv.Eventually(t, "the poller to stop", func() bool { return !sync.PollerRunning() })
		if n := testenv.SimStat(t, "event_queries"); n != queries {
			t.Fatalf("wait %d: %d event queries after the cancelled wait returned", i, n-queries)
		}
	}
	g.Open()
}

// Polled waits go on through a global-mode capture that StartCapture
// admitted: the poller's queries run in relaxed mode meanwhile, the waits
// return when their work ends, and the capture is not invalidated.
func TestPolledWaitsDuringACapture(t *testing.T) {
	testenv.OnPrimary(t, 0)
	dev := deviceInts(t, 16)
	g := testenv.NewGate(t)
	streams := heldStreams(t, g, 20)
	captured := testenv.NewStream(t)
	invalidated := testenv.SimStat(t, "captures_invalidated")
	res := startWaits(sync.Policy{Mode: sync.Polling}, streams, nil)
	testenv.Eventually(t, "every wait on the poller", func() bool { return sync.ReadStats().PolledWaits == len(streams) })

	entry := sync.StartCapture()
	ended := false
	end := func() {
		if !ended {
			ended = true
			entry.End()
		}
	}
	t.Cleanup(end)
	testenv.Must(t, libcuda.StreamBeginCapture(captured, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL))
	testenv.Must(t, libcuda.MemsetD8Async(dev, 1, 64, captured))
	r0, _ := sync.PollerCounts()
	testenv.Eventually(t, "poller rounds during the capture", func() bool { r, _ := sync.PollerCounts(); return r >= r0+3 })
	g.Open()
	for i, ch := range res {
		if err := testenv.Recv(t, ch, fmt.Sprintf("wait %d during the capture", i)); err != nil {
			t.Fatalf("wait %d during the capture: %v", i, err)
		}
	}
	var graph libcuda.Graph
	err := libcuda.StreamEndCapture(captured, &graph)
	end()
	if graph != 0 {
		testenv.Must(t, libcuda.GraphDestroy(graph))
	}
	if err != nil || graph == 0 {
		t.Fatalf("the capture beside the polled waits: %v, graph %v", err, graph)
	}
	if n := testenv.SimStat(t, "captures_invalidated") - invalidated; n != 0 {
		t.Fatalf("%d captures invalidated beside the polled waits", n)
	}
}
