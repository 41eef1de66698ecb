//go:build gpu

package testenv

import (
	"testing"

	"github.com/purecuda/purecuda/libcuda"
)

// OnGPU: the tests run on the real driver and fail without one.
const OnGPU = true

func setup() error { return libcuda.Load() }

// SimFailNext makes the next count calls of the driver function named fail
// with code. Only the simulator can do that: under -tags gpu it fails t.
func SimFailNext(t testing.TB, name string, count int, code libcuda.Result) {
	t.Helper()
	t.Fatalf("SimFailNext(%s): fault injection needs the simulator", name)
}

// SimStat returns the simulator's counter of that name. Under -tags gpu it
// fails t.
func SimStat(t testing.TB, name string) int64 {
	t.Helper()
	t.Fatalf("SimStat(%s): the statistics are the simulator's", name)
	return 0
}
