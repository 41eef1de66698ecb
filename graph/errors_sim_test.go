//go:build !gpu

package graph_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/libcuda"
)

// injected is the failure the tests below inject: a code no call of
// theirs returns otherwise.
const injected = libcuda.CUDA_ERROR_NOT_PERMITTED

// namesCall fails t unless err matches the injected Result (errors.Is)
// and its text names the driver call that returned it, as "cuX: " right
// before the Result.
func namesCall(t *testing.T, what, call string, err error) {
	t.Helper()
	if !errors.Is(err, injected) {
		t.Errorf("%s with %s failing = %v, want an error matching %v", what, call, err, injected)
		return
	}
	if want := call + ": " + injected.String(); !strings.Contains(err.Error(), want) {
		t.Errorf("%s with %s failing = %q, want it to say %q", what, call, err, want)
	}
}

// Every error that the package returns from the driver names the call
// (issue 15), and matches the driver's Result.
func TestDriverErrorsNameTheCall(t *testing.T) {
	errs := captureErrors(t)
	onPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	s, other := newStream(t), newStream(t)
	buf := deviceInts(t, n)
	body := func(s libcuda.Stream) error { return k.fillAdd(s, buf, n, 1, 0) }
	leasing := func(s libcuda.Stream) error {
		graph.Lease(s, func() {})
		return body(s)
	}
	capture := func(f func(libcuda.Stream) error) *graph.Graph {
		t.Helper()
		g, err := graph.Capture(s, graph.DefaultMode, f)
		must(t, err)
		t.Cleanup(func() { destroyed(t, g.Destroy()) })
		return g
	}
	instantiate := func(f func(libcuda.Stream) error) *graph.Exec {
		t.Helper()
		e, err := capture(f).Instantiate()
		must(t, err)
		t.Cleanup(func() { destroyed(t, e.Destroy()) })
		return e
	}
	fail := func(call string) { simFailNext(t, call, 1, injected) }

	t.Run("Capture", func(t *testing.T) {
		for _, call := range []string{"cuStreamGetCtx", "cuCtxGetCurrent", "cuStreamBeginCapture", "cuStreamGetCaptureInfo", "cuStreamEndCapture"} {
			fail(call)
			g, err := graph.Capture(s, graph.DefaultMode, body)
			if g != nil {
				must(t, g.Destroy())
			}
			namesCall(t, "Capture", call, err)
		}
		noCaptureLeft(t)
	})
	t.Run("Graph", func(t *testing.T) {
		g := capture(body)
		fail("cuGraphGetNodes")
		_, err := g.Nodes()
		namesCall(t, "Nodes", "cuGraphGetNodes", err)
		fail("cuGraphInstantiateWithFlags")
		_, err = g.Instantiate()
		namesCall(t, "Instantiate", "cuGraphInstantiateWithFlags", err)
		fail("cuEventCreate")
		_, err = capture(leasing).Instantiate()
		namesCall(t, "Instantiate of a graph that leases", "cuEventCreate", err)
		fail("cuGraphDestroy")
		namesCall(t, "Destroy", "cuGraphDestroy", capture(body).Destroy())
	})
	t.Run("Exec", func(t *testing.T) {
		e := instantiate(body)
		fail("cuGraphLaunch")
		namesCall(t, "Launch", "cuGraphLaunch", e.Launch(s))
		fail("cuGraphUpload")
		namesCall(t, "Upload", "cuGraphUpload", e.Upload(s))
		fail("cuGraphExecUpdate")
		_, err := e.Update(capture(body))
		namesCall(t, "Update", "cuGraphExecUpdate", err)
		// A launch while a capture is in progress asks whether its stream
		// is being captured.
		g, err := graph.Capture(other, graph.DefaultMode, func(other libcuda.Stream) error {
			fail("cuStreamIsCapturing")
			namesCall(t, "Launch during a capture", "cuStreamIsCapturing", e.Launch(s))
			return body(other)
		})
		must(t, err)
		must(t, g.Destroy())
		fail("cuGraphExecDestroy")
		namesCall(t, "Destroy", "cuGraphExecDestroy", instantiate(body).Destroy())

		tracked := instantiate(leasing)
		fail("cuEventRecord")
		namesCall(t, "Launch of a graph that leases", "cuEventRecord", tracked.Launch(s))
		must(t, libcuda.StreamSynchronize(s))
	})
	t.Run("Cached.Run", func(t *testing.T) {
		c := graph.NewCached(graph.DefaultMode)
		defer func() { must(t, c.Close()) }()
		must(t, c.Run(s, body))
		fail("cuGraphExecUpdate")
		namesCall(t, "Run", "cuGraphExecUpdate", c.Run(s, body))
		fail("cuStreamBeginCapture")
		namesCall(t, "Run", "cuStreamBeginCapture", c.Run(s, body))
		must(t, libcuda.StreamSynchronize(s))
	})
	drained(t)
	// Ending a capture that failed is logged too, with the call's name;
	// so is an update whose launches cannot be tracked.
	for _, m := range errs.messages() {
		if !strings.Contains(m, "cuStreamEndCapture: "+injected.String()) {
			t.Errorf("logged %q, want only the failed end of a capture", m)
		}
	}
}

// destroyed fails t unless err is nil or says that it was destroyed
// before (by the test itself, or by a Destroy whose driver call failed).
func destroyed(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, graph.ErrDestroyed) {
		t.Errorf("Destroy at the end of the test: %v", err)
	}
}
