//go:build !gpu

package graph_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// A destroy that the driver made counts as done when only putting the
// thread's capture mode back failed after it: Destroy returns nil, logs
// the failure, and the graph's leases are released, not kept for good.
// Another capture is kept open meanwhile, so that the destroy goes through
// relaxed mode (a mode switch, then the switch back, which fails here).
func TestDestroyMadeBeforeAFailedModeRestoreCounts(t *testing.T) {
	testenv.OnPrimary(t, 0)
	logged := testenv.CaptureErrors(t)
	var released atomic.Int64
	s := testenv.NewStream(t)
	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		if !graph.Lease(s, func() { released.Add(1) }) {
			t.Error("Lease refused during the capture")
		}
		return nil
	})
	testenv.Must(t, err)

	open, done := make(chan struct{}), make(chan error, 1)
	other := testenv.NewStream(t)
	go func() {
		og, err := graph.Capture(other, graph.DefaultMode, func(libcuda.Stream) error {
			close(open)
			<-done
			return nil
		})
		if err == nil {
			err = og.Destroy()
		}
		done <- err
	}()
	testenv.Recv(t, open, "the other capture to begin")
	graphs := testenv.SimStat(t, "live_graphs")
	// The first call enters relaxed mode; the second, putting the mode
	// back after cuGraphDestroy, fails.
	testenv.SimFailAfter(t, "cuThreadExchangeStreamCaptureMode", 1, 1, libcuda.CUDA_ERROR_UNKNOWN)
	err = g.Destroy()
	testenv.SimFailNext(t, "cuThreadExchangeStreamCaptureMode", 0, 0) // disarm, had it not fired
	after := testenv.SimStat(t, "live_graphs")
	done <- nil
	testenv.Must(t, testenv.Recv(t, done, "the other capture to end"))

	if err != nil {
		t.Errorf("Destroy = %v, want nil: the driver destroyed the graph", err)
	}
	if after != graphs-1 {
		t.Errorf("%d live graphs after Destroy, want %d", after, graphs-1)
	}
	testenv.Eventually(t, "the lease's release", func() bool { return released.Load() == 1 })
	// Package sync logs the thread it leaves in relaxed mode; graph logs
	// the destroy it counts as done.
	msgs := logged.Messages()
	destroyed := 0
	for _, m := range msgs {
		if !strings.Contains(m, "CUDA_ERROR_UNKNOWN") {
			t.Errorf("logged %q, not the injected failure", m)
		}
		if strings.Contains(m, "graph destroyed") {
			destroyed++
		}
	}
	if destroyed != 1 {
		t.Errorf("logged %q, want graph's message once", msgs)
	}
	noCaptureLeft(t)
}
