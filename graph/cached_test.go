package graph_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

func TestCachedCaptureUpdatesInPlaceAndInstantiatesAgainWhenTopologyChanges(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 300
	s := testenv.NewStream(t)
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	c := graph.NewCached(graph.DefaultMode)
	run := func(v int32, adds int) {
		t.Helper()
		testenv.Must(t, c.Run(s, func(s libcuda.Stream) error { return k.fillAdd(s, buf, n, v, adds) }))
		checkInts(t, fmt.Sprintf("after a run of fill %d and %d adds", v, adds), s, buf, host, v+int32(adds))
	}
	stats := func(want graph.CacheStats) {
		t.Helper()
		if got := c.Stats(); got != want {
			t.Fatalf("Stats() = %+v, want %+v", got, want)
		}
	}
	for v := range int32(5) {
		run(v, 0)
	}
	stats(graph.CacheStats{Runs: 5, Updates: 4, Instantiations: 1})

	// A failing function launches nothing and keeps the executable graph.
	boom := errors.New("boom")
	if err := c.Run(s, func(s libcuda.Stream) error {
		if err := k.fillAdd(s, buf, n, 77, 0); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Run of a failing function = %v, want its error", err)
	}
	checkInts(t, "after a failed run", s, buf, host, 4)
	stats(graph.CacheStats{Runs: 5, Updates: 4, Instantiations: 1})

	run(10, 1) // a new topology
	stats(graph.CacheStats{Runs: 6, Updates: 4, Instantiations: 2})
	run(20, 1)
	run(30, 1)
	stats(graph.CacheStats{Runs: 8, Updates: 6, Instantiations: 2})

	testenv.Must(t, c.Close())
	if err := c.Close(); !errors.Is(err, graph.ErrDestroyed) {
		t.Fatalf("a second Close = %v, want ErrDestroyed", err)
	}
	if err := c.Run(s, func(libcuda.Stream) error { return nil }); !errors.Is(err, graph.ErrDestroyed) {
		t.Fatalf("Run after Close = %v, want ErrDestroyed", err)
	}
	noCaptureLeft(t)
}
