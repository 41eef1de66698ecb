//go:build !gpu

package graph_test

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// simFailNext makes the next count calls of the driver function named fail
// with code, on the simulator.
func simFailNext(t testing.TB, name string, count int, code libcuda.Result) {
	t.Helper()
	testenv.SimFailNext(t, name, count, code)
}

// errorLog records what is logged at level Error (testenv.ErrorLog).
type errorLog struct{ l *testenv.ErrorLog }

func (h *errorLog) messages() []string { return h.l.Messages() }

// captureErrors records slog's errors for the rest of the test.
func captureErrors(t testing.TB) *errorLog { return &errorLog{testenv.CaptureErrors(t)} }
