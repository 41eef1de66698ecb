package tests

import (
	"runtime"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// TestConformanceABlockedSynchronizeSparesALaterCapture checks the driver
// fact that package sync's context waits rest on (see its Contexts): a
// cuCtxSynchronize, cuStreamSynchronize or cuEventSynchronize already
// blocked in the driver, on another thread, on a busy stream, does not
// invalidate a global-mode capture begun after it on another stream: the
// capture ends with a graph, and the call returns success once the stream
// is let go. (What a capture must not meet is such a call entering the
// driver while it is open: TestConformanceCaptureMatrix.) On the simulator
// the call is seen entering; on the GPU the test gives it a moment.
func TestConformanceABlockedSynchronizeSparesALaterCapture(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, 64))
	testenv.Fenced(t, func() { testenv.Must(t, libcuda.MemFree(dev)) })
	busy := testenv.NewStream(t)
	captured := testenv.NewStream(t)
	var e libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(e)) })
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"cuCtxSynchronize", libcuda.CtxSynchronize},
		{"cuStreamSynchronize", func() error { return libcuda.StreamSynchronize(busy) }},
		{"cuEventSynchronize", func() error { return libcuda.EventSynchronize(e) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			testenv.OnThread(t, cu)
			g := testenv.NewGate(t)
			g.Hold(t, busy)
			testenv.Must(t, libcuda.EventRecord(e, busy))
			before, _ := testenv.Stat(t, "syncs_waiting")
			blocked := testenv.WaitAsync(func() error {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				if err := libcuda.CtxSetCurrent(cu); err != nil {
					return err
				}
				return c.call()
			})
			testenv.WaitStat(t, c.name+" blocked in the driver", "syncs_waiting", before)
			testenv.StillWaiting(t, c.name, blocked)
			testenv.Must(t, libcuda.StreamBeginCapture(captured, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL))
			mset := libcuda.MemsetD8Async(dev, 1, 64, captured)
			var graph libcuda.Graph
			end := libcuda.StreamEndCapture(captured, &graph)
			if graph != 0 {
				testenv.Must(t, libcuda.GraphDestroy(graph))
			}
			g.Open()
			res := testenv.Recv(t, blocked, c.name)
			if code(mset) != 0 || code(end) != 0 || graph == 0 {
				t.Errorf("capture begun beside a blocked %s: memset %d, end %d (graph %v); want 0, 0 and a graph", c.name, code(mset), code(end), graph != 0)
			}
			if got := code(res); got != 0 {
				t.Errorf("%s blocked before the capture = %d, want 0", c.name, got)
			}
		})
	}
}
