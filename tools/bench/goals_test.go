//go:build linux

package main

import (
	"strings"
	"testing"

	bench "github.com/purecuda/purecuda/internal/benchrows"
)

// The goals table puts each row beside its floor with the ratio or the
// difference worked out, and says whether the goal is met.
func TestPrintGoalsWorksOutEachRowAgainstItsFloor(t *testing.T) {
	launch := "launch, 4 args, then a wait each 1000"
	host := "host function in a stream, then a wait each 100"
	got := map[[2]string]result{
		{launch, "Function.Launch"}:                    {ns: 2020},
		{launch, "cuda.Stream.Launch"}:                 {ns: 2100},
		{launch, "call path: Go→C per call (dl.Call)"}: {ns: 2000},
		{"SGEMM 64x64 (host overhead)", "call path: cublas.Gemm over the raw wrapper"}: {ns: 5000, other: "raw", extra: map[string]float64{bench.MetricDiff: 120, bench.MetricB: 4880}},
		{host, "cuda.Stream.HostFunc"}:               {ns: 3000, other: "C", extra: map[string]float64{bench.MetricRatio: 1.2, bench.MetricB: 2500}},
		{host, "cuda.Stream.HostFuncOnDriverThread"}: {ns: 4000, other: "C", extra: map[string]float64{bench.MetricRatio: 1.6, bench.MetricB: 2500}},
	}
	var b strings.Builder
	if err := printGoals(&b, got); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []struct{ row, fields string }{
		{"/ Function.Launch", "1.010x ≤ 1.01x yes"},
		{"/ cuda.Stream.Launch", "1.050x ≤ 1.03x NO"},
		{"/ call path: cublas.Gemm over the raw wrapper", "+120.0 ns ≤ +150 ns yes"},
		{"/ cuda.Stream.HostFunc ", "1.200x ≤ 1.50x yes"},
		{"/ cuda.Stream.HostFuncOnDriverThread", "1.600x ≤ 1.30x NO"},
	} {
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l+" ", want.row) {
				line = l
			}
		}
		if !strings.Contains(strings.Join(strings.Fields(line), " "), want.fields) {
			t.Errorf("the goal of %q: line %q, want it to say %q\n%s", want.row, line, want.fields, out)
		}
	}
}

// A waits goal compares the sync waiters' p50 with the reference's plus
// the goroutine wake-ups', with 100µs to spare.
func TestPrintWaitGoals(t *testing.T) {
	p50 := map[string]float64{
		"Wait/M=10/sync": 300e3, "Wait/M=10/reference": 100e3, "Wait/M=10/goroutines": 50e3,
		"Wait/M=1000/sync": 1.37e6, "Wait/M=1000/reference": 1.075e6, "Wait/M=1000/goroutines": 0.216e6,
		"Wait/M=100/sync": 1e6, // no reference: no goal line
	}
	var b strings.Builder
	if err := printWaitGoals(&b, []int{10, 100, 1000}, p50); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Wait/M=10/sync p50 300000 100000 + 50000 = 150000 +150000 ≤ +100000 NO",
		"Wait/M=1000/sync p50 1370000 1075000 + 216000 = 1291000 +79000 ≤ +100000 yes",
	} {
		found := false
		for _, l := range strings.Split(out, "\n") {
			found = found || strings.Join(strings.Fields(l), " ") == want
		}
		if !found {
			t.Errorf("no line %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "M=100/") {
		t.Errorf("a goal line for M=100, whose reference did not run:\n%s", out)
	}
}
