//go:build !gpu

package testenv

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/purecuda/purecuda/libcuda"
)

// OnGPU: the tests run on the simulator.
const OnGPU = false

// SimDevices is the number of devices the simulator shows the tests.
const SimDevices = 2

// simLibrary is the path of the simulator library once loaded.
var simLibrary string

// simStub is the driver simulator, sim.c: libcudasim.so, on Windows the
// DLL $PURECUDA_CUDASIM_DLL names (.ci/windows-wine builds it). Its live
// objects must be gone when a package's tests end.
var simStub = Stub{
	Name:    "cudasim",
	Sources: []string{"sim.c"},
	Env:     []string{libcuda.EnvLibrary},
	Hooks: []Hook{{Name: "sim_fail_after", Fn: &hooks.failAfter},
		{Name: "sim_stat", Fn: &hooks.stat},
		{Name: "sim_call_name", Fn: &hooks.callName},
		{Name: "sim_call_counts", Fn: &hooks.callCounts}},
	Stat: "sim_stat",
	Live: map[string]string{
		"streams":                     "live_streams",
		"events":                      "live_events",
		"device allocations":          "live_allocations",
		"host allocations":            "live_host_allocations",
		"graphs":                      "live_graphs",
		"executable graphs":           "live_graph_execs",
		"modules":                     "live_modules",
		"registered host ranges":      "registered_ranges",
		"stream captures in progress": "active_captures",
	},
}

// setup builds the simulator (once per source and compiler, in the user's
// cache directory), points libcuda at it and loads it.
func setup() error {
	if err := os.Setenv("PURECUDA_SIM_DEVICES", fmt.Sprint(SimDevices)); err != nil {
		return err
	}
	lib, err := LoadStub(simStub)
	if err != nil {
		return err
	}
	if err := libcuda.Load(); err != nil {
		return err
	}
	if got, _ := libcuda.Loaded(); got.Path != lib {
		return fmt.Errorf("loaded %s instead of the simulator %s", got.Path, lib)
	}
	simLibrary = lib
	return nil
}

// SimLibrary is the path of the loaded simulator.
func SimLibrary() string { return simLibrary }

// hooks are the simulator's test functions, bound by setup.
var hooks struct {
	failAfter  func(name string, skip, count, code int32) int32
	stat       func(name string) int64
	callName   func(i int32) string
	callCounts func(out *int64, n int32, thread int32) int32
}

func loadHooks(t testing.TB) {
	t.Helper()
	if simLibrary == "" {
		t.Fatal("the simulator's test hooks: the simulator is not loaded (testenv.Main loads it)")
	}
}

// SimFailNext makes the next count calls of the driver function named (base
// name, e.g. "cuMemHostUnregister") fail with code, on the simulator.
func SimFailNext(t testing.TB, name string, count int, code libcuda.Result) {
	t.Helper()
	loadHooks(t)
	if r := hooks.failAfter(name, 0, int32(count), int32(code)); r != 0 {
		t.Fatalf("sim_fail_after(%s) = %d", name, r)
	}
}

// SimFailAfter lets the next skip calls of the driver function named (base
// name) work as usual, then makes the count calls after them fail with
// code, on the simulator.
func SimFailAfter(t testing.TB, name string, skip, count int, code libcuda.Result) {
	t.Helper()
	loadHooks(t)
	if r := hooks.failAfter(name, int32(skip), int32(count), int32(code)); r != 0 {
		t.Fatalf("sim_fail_after(%s) = %d", name, r)
	}
}

// SimStat returns the simulator's counter of that name (see sim_stat in
// sim.c); cumulative counters count since the library was loaded.
func SimStat(t testing.TB, name string) int64 {
	t.Helper()
	loadHooks(t)
	v := hooks.stat(name)
	if v < 0 {
		t.Fatalf("sim_stat(%s): no such counter", name)
	}
	return v
}

// Stat returns the simulator's counter of that name, and true; under
// -tags gpu it returns 0 and false (the driver keeps no such counter).
func Stat(t testing.TB, name string) (int64, bool) {
	t.Helper()
	return SimStat(t, name), true
}

// WaitStat waits until the simulator's counter of that name exceeds
// above, or fails t after Timeout. Under -tags gpu, where nothing can be
// observed, it gives the other goroutines a moment instead; what the test
// asserts after it must hold either way.
func WaitStat(t testing.TB, what, name string, above int64) {
	t.Helper()
	Eventually(t, what, func() bool { return SimStat(t, name) > above })
}

// CountCalls runs f and returns the driver calls made meanwhile, by entry
// point (base name, e.g. "cuStreamGetCtx"), on the simulator: the calls
// of every goroutine and thread of the process, so the caller keeps other
// work quiet while f runs. They are the difference of the simulator's
// counts of calls (those sim_stat's "calls:NAME" reads), each read in one
// call, after f and before. Under -tags gpu it fails t.
func CountCalls(t testing.TB, f func()) map[string]int64 {
	t.Helper()
	return countCalls(t, f, 0)
}

// CountThreadCalls is CountCalls of the calls that f makes on its own
// goroutine: f runs with the goroutine locked to its thread, and only that
// thread's calls count, so the background work of other goroutines (a
// release, a collected handle's cleanup) cannot add to them.
func CountThreadCalls(t testing.TB, f func()) map[string]int64 {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return countCalls(t, f, 1)
}

func countCalls(t testing.TB, f func(), thread int32) map[string]int64 {
	t.Helper()
	loadHooks(t)
	before, after := make([]int64, maxCallSites), make([]int64, maxCallSites)
	hooks.callCounts(&before[0], maxCallSites, thread)
	f()
	n := hooks.callCounts(&after[0], maxCallSites, thread)
	calls := map[string]int64{}
	for i := range min(int(n), maxCallSites) {
		// A site first called in f is 0 in before.
		if d := after[i] - before[i]; d != 0 {
			calls[hooks.callName(int32(i))] += d
		}
	}
	return calls
}

// maxCallSites is sim.c's max_call_sites: the most call sites it counts.
const maxCallSites = 512
