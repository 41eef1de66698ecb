//go:build !gpu

package graph_test

import (
	"maps"
	"strings"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// A sweep of a Jacobi-like loop through graph.Cached makes the driver calls
// of C's loop and, for Run, the two that find the contexts; with the
// residual in wrapped memory Use()d in each capture, the same (issue 29:
// the sweep made cuStreamGetCaptureInfo for the capture's id, one more for
// the Use's lease, and cuCtxGetCurrent again for the update: 12 calls and
// 13 beside C's 9 for Run). RunCurrent, for a caller whose thread has the
// context current, makes C's calls and no other. No sweep allocates.
func TestCachedSweepMakesTheDriverCallsOfCsLoop(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	s := testenv.NewStream(t)
	const n = 64
	buf := deviceInts(t, n)
	pinned := pinnedInts(t, 1)
	residual := make([]int32, 1)
	wrapped, err := hostmem.Wrap(cu, residual)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "wrapped.Free", wrapped.Free) })
	// C's sweep: its capture, update and launch, and its wait.
	cSweep := testenv.CSweepCalls()
	cSweep["cuStreamSynchronize"] = 1
	withRun := maps.Clone(cSweep)
	withRun["cuStreamGetCtx"], withRun["cuCtxGetCurrent"] = 1, 1
	for _, tc := range []struct {
		way  string
		wrap bool
		want map[string]int64
	}{
		{"Run, pinned residual", false, withRun},
		{"Run, wrapped residual Use()d", true, withRun},
		{"RunCurrent, pinned residual", false, cSweep},
		{"RunCurrent, wrapped residual Use()d", true, cSweep},
	} {
		c := graph.NewCached(graph.DefaultMode)
		k32 := int32(0)
		body := func(s libcuda.Stream) error {
			if err := libcuda.MemsetD8Async(buf, 0, 4, s); err != nil {
				return err
			}
			if err := k.fill.Launch(graphGrid, graphBlock, 0, s, buf, uint64(n), k32); err != nil {
				return err
			}
			dst := unsafe.Pointer(&pinned[0])
			if tc.wrap {
				dst = wrapped.Pointer()
			}
			if err := libcuda.MemcpyDtoHAsync(dst, buf, 4, s); err != nil {
				return err
			}
			if tc.wrap {
				return wrapped.Use(s)
			}
			return nil
		}
		sweep := func() {
			k32++
			var err error
			if strings.HasPrefix(tc.way, "RunCurrent") {
				err = c.RunCurrent(cu, s, body)
			} else {
				err = c.Run(s, body)
			}
			testenv.Must(t, err)
			testenv.Must(t, libcuda.StreamSynchronize(s))
			got := pinned[0]
			if tc.wrap {
				got = residual[0]
			}
			if got != k32 {
				t.Fatalf("%s: sweep %d copied %d to the host", tc.way, k32, got)
			}
		}
		sweep() // instantiates
		sweep() // the first update
		// The calls counted are the process's: the background work of the
		// case before (its graph's release) ends first.
		drained(t)
		testenv.Must(t, hostmem.Drain(testenv.Context(t)))
		const sweeps = 20
		calls := testenv.CountThreadCalls(t, func() {
			for range sweeps {
				sweep()
			}
		})
		if got, want := testenv.CallsPer(calls, sweeps), testenv.CallsPer(tc.want, 1); got != want {
			t.Errorf("%s: driver calls a sweep:\n%s\nwant\n%s", tc.way, got, want)
		}
		allocs := testing.AllocsPerRun(sweeps, sweep)
		want := 0.0
		if raceDetector { // sync.Pool drops some of the leases it is given
			want = 1
		}
		if allocs > want {
			t.Errorf("%s: %v allocations a sweep, want at most %v", tc.way, allocs, want)
		}
		testenv.MustBounded(t, "c.Close", c.Close)
	}
	drained(t)
}
