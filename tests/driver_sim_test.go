//go:build !gpu && (linux || windows)

package tests

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// simFailNext makes the next count calls of the driver function named
// (base name, e.g. "cuMemHostUnregister") fail with code, on the simulator.
func simFailNext(t testing.TB, name string, count int, code libcuda.Result) {
	t.Helper()
	testenv.SimFailNext(t, name, count, code)
}

// simStat returns the simulator's counter of that name (see sim_stat in
// sim.c); cumulative counters count since the library was loaded.
func simStat(t testing.TB, name string) int64 {
	t.Helper()
	return testenv.SimStat(t, name)
}

// stressCycles is the number of wrap/use/free cycles of the hostmem stress
// test on the simulator.
const stressCycles = 100_000
