//go:build !gpu

package cuda_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
)

// The timed part of examples/simplecudagraphs (two event records around
// three launches of a graph whose host function runs on the driver's
// thread, a Sync, then Elapsed) makes C's calls (baseline.c:
// cuEventRecord, cuGraphLaunch 3 times, cuEventRecord,
// cuStreamSynchronize) with the wait of a finished stream as one
// cuStreamQuery, and one cuCtxGetCurrent for each record and launch,
// which make the stream's context current (see Context, # Threads);
// Elapsed is cuEventElapsedTime. None of it allocates, host functions
// included.
func TestSimpleCudaGraphsTimedPartMakesCsCallsAndAllocatesNothing(t *testing.T) {
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	testenv.OnThread(t, f.ctx.Raw())
	e, ran := hostFuncGraph(t, f)
	start, err := cuda.NewEvent(f.ctx)
	testenv.Must(t, err)
	defer func() { testenv.Must(t, start.Close()) }()
	stop, err := cuda.NewEvent(f.ctx)
	testenv.Must(t, err)
	defer func() { testenv.Must(t, stop.Close()) }()
	const launches = 3
	submit := func() {
		testenv.Must(t, f.s.RecordEvent(start))
		for range launches {
			testenv.Must(t, f.s.LaunchGraph(e))
		}
		testenv.Must(t, f.s.RecordEvent(stop))
	}
	bg := context.Background()
	finish := func() {
		sync(t, f.s) // not counted: sync.Stream's queries depend on timing
		for ran.Load()%launches != 0 {
			runtime.Gosched() // the host functions ran before the Sync returned
		}
		testenv.Must(t, f.s.Sync(bg))
		if _, err := cuda.Elapsed(start, stop); err != nil {
			t.Fatal(err)
		}
	}
	submit() // the driver's callback thread enters Go a first time
	finish()
	testenv.Must(t, graph.Drain(testenv.Context(t)))

	const runs = 10
	calls := map[string]int64{}
	for range runs {
		for name, n := range testenv.CountThreadCalls(t, submit) {
			calls[name] += n
		}
		sync(t, f.s)
		for name, n := range testenv.CountThreadCalls(t, func() {
			testenv.Must(t, f.s.Sync(bg))
			if _, err := cuda.Elapsed(start, stop); err != nil {
				t.Fatal(err)
			}
		}) {
			calls[name] += n
		}
	}
	want := map[string]int64{"cuEventRecord": 2, "cuGraphLaunch": launches, "cuCtxGetCurrent": 2 + launches,
		"cuStreamQuery": 1, "cuEventElapsedTime": 1}
	if got, want := testenv.CallsPer(calls, runs), testenv.CallsPer(want, 1); got != want {
		t.Errorf("driver calls of simplecudagraphs' timed part:\n%s\nwant\n%s", got, want)
	}
	if got := ran.Load(); got != launches*(runs+1) {
		t.Errorf("the host function ran %d times in %d launches", got, launches*(runs+1))
	}
	// Allocations: the submission, and the Sync and Elapsed once the work
	// is done (a Sync that waits long goes to a helper thread, which
	// allocates; simplecudagraphs' one Sync a run does).
	var ms runtime.MemStats
	var allocs uint64
	for range runs {
		runtime.ReadMemStats(&ms)
		m0 := ms.Mallocs
		submit()
		runtime.ReadMemStats(&ms)
		allocs += ms.Mallocs - m0
		finish()
		runtime.ReadMemStats(&ms)
		m0 = ms.Mallocs
		testenv.Must(t, f.s.Sync(bg))
		_, err := cuda.Elapsed(start, stop)
		runtime.ReadMemStats(&ms)
		allocs += ms.Mallocs - m0
		testenv.Must(t, err)
	}
	// As testing.AllocsPerRun counts: whole allocations a run.
	if perRun := allocs / runs; perRun != 0 && !raceEnabled {
		t.Errorf("%d allocations in %d runs of simplecudagraphs' timed part, want none", allocs, runs)
	}
}

// hostFuncGraph captures the graph of examples/simplecudagraphs' shape on
// f's stream (a memset, then a host function on the driver's thread that
// counts its runs) and instantiates it; both are destroyed when the test
// ends.
func hostFuncGraph(t *testing.T, f *fixture) (*graph.Exec, *atomic.Int64) {
	t.Helper()
	d := alloc(t, f.s, make([]int32, 64))
	ran := new(atomic.Int64)
	g, err := f.s.Capture(func(s *cuda.Stream) error {
		if err := cuda.Zero(s, d); err != nil {
			return err
		}
		return s.HostFuncOnDriverThread(func() { ran.Add(1) })
	})
	testenv.Must(t, err)
	e, err := g.Instantiate()
	if err != nil {
		testenv.Must(t, errors.Join(err, g.Destroy()))
	}
	t.Cleanup(func() { testenv.Must(t, errors.Join(e.Destroy(), g.Destroy())) })
	return e, ran
}
