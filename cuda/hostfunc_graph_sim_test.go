//go:build !gpu && linux && (amd64 || arm64)

package cuda_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
)

// examples/simplecudagraphs' timed loop, on the simulator: an executable
// graph whose last node is a host function (HostFuncOnDriverThread, as
// the sample's check), launched again and again. A launch asks of the
// driver what C's loop asks (cuGraphLaunch) and the thread's context
// (cuCtxGetCurrent, as every call of package cuda that needs it current:
// C's loop knows it), and a launch and the run of its host function
// allocate nothing, so that the sample's Go side costs the stream's
// timeline nothing C's does not, beside the entry into Go.
func TestGraphWithAHostFuncLaunchMakesCsCallsAndAllocatesNothing(t *testing.T) {
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	testenv.OnThread(t, f.ctx.Raw())
	e, ran := hostFuncGraph(t, f)
	launch := func() { testenv.Must(t, f.s.LaunchGraph(e)) }
	launch() // the driver's callback thread enters Go a first time
	sync(t, f.s)
	testenv.Must(t, graph.Drain(testenv.Context(t)))

	const launches = 20
	calls := map[string]int64{}
	for range launches {
		for name, n := range testenv.CountThreadCalls(t, launch) {
			calls[name] += n
		}
		sync(t, f.s) // not counted: sync.Stream's queries depend on timing
	}
	if got, want := testenv.CallsPer(calls, launches), testenv.CallsPer(map[string]int64{"cuGraphLaunch": 1, "cuCtxGetCurrent": 1}, 1); got != want {
		t.Errorf("driver calls a launch:\n%s\nwant\n%s", got, want)
	}

	// A run: a launch and a wait for its host function by watching it
	// count (Sync's wait allocates when it goes to a helper thread).
	var ms runtime.MemStats
	var allocs uint64
	before := ran.Load()
	const runs = 200 // the last Sync's helper may still allocate a few times meanwhile
	for i := range runs {
		runtime.ReadMemStats(&ms)
		m0 := ms.Mallocs
		launch()
		for start := time.Now(); ran.Load() < before+int64(i)+1; runtime.Gosched() {
			if time.Since(start) > testenv.Timeout {
				t.Fatalf("launch %d: its host function did not run in %v", i, testenv.Timeout)
			}
		}
		runtime.ReadMemStats(&ms)
		allocs += ms.Mallocs - m0
	}
	sync(t, f.s)
	// As testing.AllocsPerRun counts: whole allocations a run.
	if perRun := allocs / runs; perRun != 0 && !raceEnabled {
		t.Errorf("%d allocations in %d launches of a graph with a host function, want none", allocs, runs)
	}
}
