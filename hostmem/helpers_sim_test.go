//go:build !gpu

package hostmem_test

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
	"github.com/purecuda/purecuda/libcuda"
)

// simFailNext makes the next count calls of the driver function named fail
// with code, on the simulator.
func simFailNext(t testing.TB, name string, count int, code libcuda.Result) {
	t.Helper()
	testenv.SimFailNext(t, name, count, code)
}

// simStat returns the simulator's counter of that name.
func simStat(t testing.TB, name string) int64 {
	t.Helper()
	return testenv.SimStat(t, name)
}

// stillHeld is memtest.StillHeld (only simulator tests use it).
var stillHeld = memtest.StillHeld
