//go:build gpu

package testenv

import (
	"testing"
	"time"

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

// SimFailAfter makes the count calls of the driver function named after
// its next skip calls fail with code. Only the simulator can do that: under
// -tags gpu it fails t.
func SimFailAfter(t testing.TB, name string, skip, count int, code libcuda.Result) {
	t.Helper()
	t.Fatalf("SimFailAfter(%s): fault injection needs the simulator", name)
}

// SimStat returns the simulator's counter of that name. Under -tags gpu it
// fails t.
func SimStat(t testing.TB, name string) int64 {
	t.Helper()
	t.Fatalf("SimStat(%s): the statistics are the simulator's", name)
	return 0
}

// CountCalls counts the driver calls that f makes on the simulator. Under
// -tags gpu it fails t.
func CountCalls(t testing.TB, f func()) map[string]int64 {
	t.Helper()
	t.Fatal("CountCalls: the counts are the simulator's")
	return nil
}

// CountThreadCalls counts the driver calls of f's thread on the simulator.
// Under -tags gpu it fails t.
func CountThreadCalls(t testing.TB, f func()) map[string]int64 {
	t.Helper()
	t.Fatal("CountThreadCalls: the counts are the simulator's")
	return nil
}

// Stat returns the simulator's counter of that name, and true; under
// -tags gpu it returns 0 and false (the driver keeps no such counter).
func Stat(t testing.TB, name string) (int64, bool) { return 0, false }

// WaitStat waits until the simulator's counter of that name exceeds
// above, or fails t after Timeout. Under -tags gpu, where nothing can be
// observed, it gives the other goroutines a moment instead; what the test
// asserts after it must hold either way.
func WaitStat(t testing.TB, what, name string, above int64) {
	time.Sleep(100 * time.Millisecond)
}
