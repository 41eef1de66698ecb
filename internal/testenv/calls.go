package testenv

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// CallsOf is perOp, a count of each driver call an operation makes, for
// n operations: what CountCalls should give for n of them.
func CallsOf(perOp map[string]int64, n int64) map[string]int64 {
	out := make(map[string]int64, len(perOp))
	for name, k := range perOp {
		out[name] = k * n
	}
	return out
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
