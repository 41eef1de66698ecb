package graph_test

import (
	"errors"
	"fmt"
	"strings"
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

	testenv.MustBounded(t, "c.Close", c.Close)
	if err := testenv.BoundedErr(t, "c.Close", c.Close); !errors.Is(err, graph.ErrDestroyed) {
		t.Fatalf("a second Close = %v, want ErrDestroyed", err)
	}
	if err := c.Run(s, func(libcuda.Stream) error { return nil }); !errors.Is(err, graph.ErrDestroyed) {
		t.Fatalf("Run after Close = %v, want ErrDestroyed", err)
	}
	noCaptureLeft(t)
}

// RunCurrent takes the caller's word that the context it is given is the
// stream's and current, except when it instantiates: then it checks both
// and refuses, before any capture, a context that is not the stream's or
// not current on the calling thread. Once the context is current it runs
// as Run does, on the calling thread.
func TestCachedRunCurrentChecksTheContextsWhenItInstantiates(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	s := testenv.NewStream(t)
	buf := deviceInts(t, n)
	host := pinnedInts(t, n)
	var dev libcuda.Device
	testenv.Must(t, libcuda.CtxGetDevice(&dev))
	var other libcuda.Context
	testenv.Must(t, libcuda.CtxCreate(&other, nil, 0, dev)) // current now
	t.Cleanup(func() { testenv.Must(t, libcuda.CtxDestroy(other)) })
	c := graph.NewCached(graph.DefaultMode)
	defer func() { testenv.MustBounded(t, "c.Close", c.Close) }()
	body := func(v int32) func(libcuda.Stream) error {
		return func(s libcuda.Stream) error { return k.fillAdd(s, buf, n, v, 0) }
	}
	if err := c.RunCurrent(cu, s, body(1)); err == nil || !strings.Contains(err.Error(), "not current") {
		t.Fatalf("RunCurrent with another context current = %v, want it refused", err)
	}
	if err := c.RunCurrent(other, s, body(1)); err == nil || !strings.Contains(err.Error(), "not the stream's") {
		t.Fatalf("RunCurrent with a context not the stream's = %v, want it refused", err)
	}
	var st libcuda.StreamCaptureStatus
	testenv.Must(t, libcuda.StreamIsCapturing(s, &st))
	if got := c.Stats(); got != (graph.CacheStats{}) || st != libcuda.CU_STREAM_CAPTURE_STATUS_NONE {
		t.Fatalf("after the refused runs: Stats() = %+v, want none; the stream's capture status %v", got, st)
	}
	noCaptureLeft(t)
	testenv.Must(t, libcuda.CtxSetCurrent(cu))
	for v := range int32(3) {
		testenv.Must(t, c.RunCurrent(cu, s, body(v)))
		checkInts(t, "after RunCurrent", s, buf, host, v)
	}
	if got, want := c.Stats(), (graph.CacheStats{Runs: 3, Updates: 2, Instantiations: 1}); got != want {
		t.Fatalf("Stats() = %+v, want %+v", got, want)
	}
}
