package testenv

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// CSweepCalls returns what one sweep of C's Jacobi loop
// (examples/jacobi/baseline.c, tools/bench's solver in C) asks of the
// driver to capture, update and launch its graph, a count a call: the
// capture of a memset (here cuMemsetD8Async; C's zeroes with the D32
// form), the sweep's kernel and the copy of the residual to the host, the
// update of the executable graph in place, the destruction of the
// captured graph and the launch; not the wait for the sweep. The map is
// new at each call: a test adds the calls its own sweep makes beside
// these.
func CSweepCalls() map[string]int64 {
	return map[string]int64{
		"cuStreamBeginCapture": 1,
		"cuMemsetD8Async":      1,
		"cuLaunchKernel":       1,
		"cuMemcpyDtoHAsync":    1,
		"cuStreamEndCapture":   1,
		"cuGraphExecUpdate":    1,
		"cuGraphDestroy":       1,
		"cuGraphLaunch":        1,
	}
}

// CallsPer lists calls, CountCalls's count of each driver call over n
// operations, a line per call: the calls per operation, or the count and n
// where they do not divide. Two lists compare as strings, and a failing
// test prints them.
func CallsPer(calls map[string]int64, n int64) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(calls)) {
		k := calls[name]
		if k%n == 0 {
			fmt.Fprintf(&b, "  %s %d\n", name, k/n)
		} else {
			fmt.Fprintf(&b, "  %s %d in %d\n", name, k, n)
		}
	}
	return b.String()
}
