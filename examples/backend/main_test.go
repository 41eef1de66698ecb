package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
)

// The simulator stands in for the driver and the cuBLAS stand-in for
// cuBLAS; under -tags gpu the program runs on the GPU.
func TestMain(m *testing.M) {
	testenv.MainBLAS(m, testenv.Drain(hostmem.Drain))
}

var allocsLine = regexp.MustCompile(`Go allocations per step: ([0-9.]+)`)

// The program runs its step eagerly, captures and replays it, and checks
// it on the CPU three times (eager, replayed, replayed with new inputs in
// the same buffers); it reports
// the Go allocations of a replay, which stay few: a replay is one
// LaunchGraph.
func TestBackendStepPasses(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log(out.String())
	if !strings.Contains(out.String(), "check: PASSED") {
		t.Fatalf("no check: PASSED in\n%s", out.String())
	}
	sub := allocsLine.FindStringSubmatch(out.String())
	if sub == nil {
		t.Fatal("no Go allocations per step in the output")
	}
	if v, err := strconv.ParseFloat(sub[1], 64); err != nil || v > 1 {
		t.Errorf("Go allocations per step: %s, want at most 1", sub[1])
	}
	if n := strings.Count(out.String(), "largest error"); n != 3 {
		t.Errorf("%d checks, want 3", n)
	}
}
