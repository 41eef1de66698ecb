//go:build !gpu

package graph_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
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
// (issue 15), and matches the driver's Result. All runs on the test's
// locked thread, the primary context current.
func TestDriverErrorsNameTheCall(t *testing.T) {
	// By design a failed destroy keeps its graph for good: the test runs in a child
	// process, which ends with them, so that the leak check after the
	// package's tests (testenv.Main) stays exact.
	if !testenv.InChild(t) {
		return
	}
	errs := testenv.CaptureErrors(t)
	cu := testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	s, other := testenv.NewStream(t), testenv.NewStream(t)
	buf := deviceInts(t, n)
	body := func(s libcuda.Stream) error { return k.fillAdd(s, buf, n, 1, 0) }
	leasing := func(s libcuda.Stream) error {
		graph.Lease(s, func() {})
		return body(s)
	}
	capture := func(f func(libcuda.Stream) error) *graph.Graph {
		t.Helper()
		g, err := graph.Capture(s, graph.DefaultMode, f)
		testenv.Must(t, err)
		t.Cleanup(func() { destroyed(t, g.Destroy()) })
		return g
	}
	instantiate := func(f func(libcuda.Stream) error) *graph.Exec {
		t.Helper()
		e, err := capture(f).Instantiate()
		testenv.Must(t, err)
		t.Cleanup(func() { destroyed(t, e.Destroy()) })
		return e
	}
	// failing runs f with call's next call failing, and disarms the
	// failure after, whether f reached the call or not.
	failing := func(call string, f func() error) error {
		testenv.SimFailNext(t, call, 1, injected)
		defer testenv.SimFailNext(t, call, 0, 0)
		return f()
	}

	// Capture.
	for _, call := range []string{"cuStreamGetCtx", "cuCtxGetCurrent", "cuStreamBeginCapture", "cuStreamEndCapture"} {
		namesCall(t, "Capture", call, failing(call, func() error {
			g, err := graph.Capture(s, graph.DefaultMode, body)
			if g != nil {
				testenv.MustBounded(t, "g.Destroy", g.Destroy)
			}
			return err
		}))
	}
	// The capture of the per-thread stream asks for its id at the begin.
	namesCall(t, "Capture of the per-thread stream", "cuStreamGetCaptureInfo", failing("cuStreamGetCaptureInfo", func() error {
		g, err := graph.Capture(libcuda.CU_STREAM_PER_THREAD, graph.DefaultMode, body)
		if g != nil {
			testenv.MustBounded(t, "g.Destroy", g.Destroy)
		}
		return err
	}))
	noCaptureLeft(t)

	// Graph.
	g := capture(body)
	namesCall(t, "Nodes", "cuGraphGetNodes", failing("cuGraphGetNodes", func() error {
		_, err := g.Nodes()
		return err
	}))
	namesCall(t, "Instantiate", "cuGraphInstantiateWithFlags", failing("cuGraphInstantiateWithFlags", func() error {
		_, err := g.Instantiate()
		return err
	}))
	gl := capture(leasing)
	namesCall(t, "Instantiate of a graph that leases", "cuEventCreate", failing("cuEventCreate", func() error {
		_, err := gl.Instantiate()
		return err
	}))
	gd := capture(body)
	namesCall(t, "Destroy", "cuGraphDestroy", failing("cuGraphDestroy", gd.Destroy))

	// Exec.
	e := instantiate(body)
	namesCall(t, "Launch", "cuGraphLaunch", failing("cuGraphLaunch", func() error { return e.Launch(s) }))
	namesCall(t, "Upload", "cuGraphUpload", failing("cuGraphUpload", func() error { return e.Upload(s) }))
	gu := capture(body)
	namesCall(t, "Update", "cuGraphExecUpdate", failing("cuGraphExecUpdate", func() error {
		_, err := e.Update(gu)
		return err
	}))
	// A launch while a capture is in progress asks whether its stream is
	// being captured.
	gc, err := graph.Capture(other, graph.DefaultMode, func(other libcuda.Stream) error {
		namesCall(t, "Launch during a capture", "cuStreamIsCapturing", failing("cuStreamIsCapturing", func() error { return e.Launch(s) }))
		return body(other)
	})
	testenv.Must(t, err)
	testenv.MustBounded(t, "gc.Destroy", gc.Destroy)
	ed := instantiate(body)
	namesCall(t, "Destroy", "cuGraphExecDestroy", failing("cuGraphExecDestroy", ed.Destroy))
	tracked := instantiate(leasing)
	// On a stream of the caller's, a launch records nothing (the
	// launches are settled at an update or Destroy); on the legacy
	// stream it records its event at once.
	namesCall(t, "Launch of a graph that leases", "cuEventRecord", failing("cuEventRecord", func() error { return tracked.Launch(libcuda.CU_STREAM_LEGACY) }))
	testenv.Must(t, libcuda.CtxSynchronize())
	testenv.Must(t, libcuda.StreamSynchronize(s))

	// Cached.Run.
	c := graph.NewCached(graph.DefaultMode)
	testenv.Must(t, c.Run(s, body))
	for _, call := range []string{"cuStreamGetCtx", "cuCtxGetCurrent", "cuStreamBeginCapture", "cuGraphExecUpdate"} {
		namesCall(t, "Run", call, failing(call, func() error { return c.Run(s, body) }))
	}
	testenv.Must(t, libcuda.StreamSynchronize(s))
	testenv.MustBounded(t, "c.Close", c.Close)
	// RunCurrent asks for the contexts only when it instantiates.
	for _, call := range []string{"cuStreamGetCtx", "cuCtxGetCurrent"} {
		c := graph.NewCached(graph.DefaultMode)
		namesCall(t, "RunCurrent", call, failing(call, func() error { return c.RunCurrent(cu, s, body) }))
		testenv.MustBounded(t, "c.Close", c.Close)
	}
	drained(t)
	// Ending a capture that failed is logged too, with the call's name.
	for _, m := range errs.Messages() {
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

// A capture whose end fails more often than Capture retries it, the
// stream still capturing, stays registered until the next Capture on that
// stream ends it: while the driver captures, no release machinery may
// make the calls that would invalidate the capture (the soak found a
// capture left unregistered, later invalidated by a stream query, and the
// next begin on its stream refused with CUDA_ERROR_ILLEGAL_STATE).
func TestACaptureWhoseEndKeepsFailingStaysRegistered(t *testing.T) {
	testenv.CaptureErrors(t)
	testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n = 64
	s := testenv.NewStream(t)
	buf := deviceInts(t, n)
	body := func(s libcuda.Stream) error { return k.fillAdd(s, buf, n, 1, 0) }
	invalidated := testenv.SimStat(t, "captures_invalidated")

	testenv.SimFailNext(t, "cuStreamEndCapture", 100, injected)
	_, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, body)
	testenv.SimFailNext(t, "cuStreamEndCapture", 0, 0)
	if !errors.Is(err, injected) {
		t.Fatalf("Capture whose every end fails: %v; want the injected error", err)
	}
	var st libcuda.StreamCaptureStatus
	testenv.Must(t, libcuda.StreamIsCapturing(s, &st))
	if st != libcuda.CU_STREAM_CAPTURE_STATUS_ACTIVE {
		t.Fatalf("the stream's capture status is %v; the test needs it still capturing", st)
	}
	if got := sync.CapturesInProgress(); got != 1 {
		t.Fatalf("sync.CapturesInProgress() = %d while the driver still captures the stream; want 1", got)
	}
	// A potentially unsafe call in global mode meanwhile goes relaxed.
	if err := sync.Stream(context.Background(), 0, testenv.NewStream(t)); err != nil {
		t.Fatal(err)
	}

	g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, body)
	testenv.Must(t, err)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	testenv.Must(t, libcuda.StreamIsCapturing(s, &st))
	if st != libcuda.CU_STREAM_CAPTURE_STATUS_NONE {
		t.Fatalf("after the next Capture, the stream's capture status is %v", st)
	}
	noCaptureLeft(t)
	if got := testenv.SimStat(t, "captures_invalidated") - invalidated; got != 0 {
		t.Fatalf("%d captures invalidated", got)
	}
}
