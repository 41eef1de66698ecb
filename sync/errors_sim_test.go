//go:build !gpu

package sync_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// An error that sync returns from the driver names the call that failed
// and still matches the driver's Result (issue 15), on every path: the
// caller's own query, a helper's blocking wait, the shared poller, the
// legacy stream's context switch, a context wait and Capturing.
func TestDriverErrorsNameTheCall(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	const code = libcuda.CUDA_ERROR_UNKNOWN
	idle := testenv.NewStream(t)
	var ev libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(ev)) })
	// Every wait is bounded: a path that blocks instead of failing fails
	// the test (context deadline exceeded) instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	blocking := sync.Policy{Mode: sync.Blocking}
	polling := sync.Policy{Mode: sync.Polling}

	// held returns a stream held until the test ends, and an event
	// recorded behind the hold.
	held := func(t *testing.T) (libcuda.Stream, libcuda.Event) {
		g := testenv.NewGate(t)
		s := testenv.NewStream(t)
		g.Hold(t, s)
		t.Cleanup(g.Open)
		var e libcuda.Event
		testenv.Must(t, libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
		t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(e)) })
		testenv.Must(t, libcuda.EventRecord(e, s))
		return s, e
	}
	// onPoller starts wait and returns its result once it is on the
	// shared poller.
	onPoller := func(t *testing.T, wait func() error) <-chan error {
		res := testenv.WaitAsync(wait)
		testenv.Eventually(t, "the wait on the poller", func() bool { return sync.ReadStats().PolledWaits == 1 })
		return res
	}

	for _, c := range []struct {
		name, call string
		run        func(t *testing.T) error
	}{
		{"Stream", "cuStreamQuery", func(t *testing.T) error {
			testenv.SimFailNext(t, "cuStreamQuery", 1, code)
			return sync.Stream(ctx, 0, idle)
		}},
		{"Event", "cuEventQuery", func(t *testing.T) error {
			testenv.SimFailNext(t, "cuEventQuery", 1, code)
			return sync.Event(ctx, ev)
		}},
		{"EventDone", "cuEventQuery", func(t *testing.T) error {
			testenv.SimFailNext(t, "cuEventQuery", 1, code)
			_, err := sync.EventDone(ev)
			return err
		}},
		{"legacy stream", "cuCtxGetCurrent", func(t *testing.T) error {
			testenv.SimFailNext(t, "cuCtxGetCurrent", 1, code)
			return sync.Stream(ctx, cu, libcuda.CU_STREAM_LEGACY)
		}},
		{"Capturing", "cuStreamIsCapturing", func(t *testing.T) error {
			testenv.SimFailNext(t, "cuStreamIsCapturing", 1, code)
			_, err := sync.Capturing(idle)
			return err
		}},
		{"Context", "cuCtxSynchronize", func(t *testing.T) error {
			testenv.SimFailNext(t, "cuCtxSynchronize", 1, code)
			return sync.Context(ctx, cu)
		}},
		{"helper's event", "cuEventCreate", func(t *testing.T) error {
			s, _ := held(t)
			testenv.SimFailNext(t, "cuEventCreate", 1, code)
			return testenv.Recv(t, testenv.WaitAsync(func() error { return blocking.Stream(ctx, 0, s) }), "the blocking wait")
		}},
		{"helper's event wait", "cuEventSynchronize", func(t *testing.T) error {
			_, e := held(t)
			testenv.SimFailNext(t, "cuEventSynchronize", 1, code)
			return testenv.Recv(t, testenv.WaitAsync(func() error { return blocking.Event(ctx, e) }), "the blocking wait")
		}},
		{"poller's query", "cuStreamQuery", func(t *testing.T) error {
			s, _ := held(t)
			res := onPoller(t, func() error { return polling.Stream(ctx, 0, s) })
			testenv.SimFailNext(t, "cuStreamQuery", 1, code)
			return testenv.Recv(t, res, "the polled wait")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			testenv.OnThread(t, cu)
			err := c.run(t)
			if !errors.Is(err, code) {
				t.Fatalf("error %v; want one matching %v", err, code)
			}
			if !strings.Contains(err.Error(), c.call+": ") {
				t.Fatalf("error %q does not name %s", err, c.call)
			}
		})
	}
}
