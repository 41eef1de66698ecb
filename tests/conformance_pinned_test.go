package tests

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// TestConformancePinnedCallsDoNotWaitForARunningHostFunction checks the
// driver fact that libcuda's pinned calls rest on (libcuda's package
// documentation, "Pinned calls"): while a host function runs on a stream
// (Go code, which needs a processor of its own to finish), the entry points
// made as pinned calls return at once, on that stream too — none of them
// waits for the host function. A pinned call that did wait would hold its
// P while Go code it waits for cannot run during a stop of the world.
//
// The calls are made here through runtime.cgocall (pinned calls off), so
// that a call that does wait fails the test instead of holding a P; the
// fact checked is the driver's, whichever path calls it.
func TestConformancePinnedCallsDoNotWaitForARunningHostFunction(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "ctx.Close", ctx.Close) })
	s, err := ctx.NewStream(cuda.NonBlocking())
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "s.Close", s.Close) })
	other := testenv.NewStream(t)
	var after libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&after, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(after)) })

	// What the probes use is made before the host function starts: a
	// module load waits for a running host function (measured on the
	// H200: cuModuleLoadData did not return while one ran).
	fill := testenv.Kernel(t, testenv.LoadKernels(t), "fill_i32")
	var buf libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&buf, 64*4))
	testenv.Fenced(t, func() { testenv.Must(t, libcuda.MemFree(buf)) })

	entered, release := make(chan struct{}), make(chan struct{})
	testenv.Must(t, s.HostFunc(func() {
		close(entered)
		<-release
	}))
	testenv.Must(t, libcuda.EventRecord(after, s.Raw()))
	testenv.Recv(t, entered, "the host function to start")
	released := false
	let := func() {
		if !released {
			released = true
			close(release)
		}
	}
	defer let()

	was := dl.SetPinned(false)
	defer dl.SetPinned(was)

	type probe struct {
		name string
		call func() error
		want error // nil, or the Result the call must return
	}
	raw := s.Raw()
	var c libcuda.Context
	var id uint64
	var status libcuda.StreamCaptureStatus
	mode := libcuda.CU_STREAM_CAPTURE_MODE_RELAXED
	probes := []probe{
		{"cuStreamQuery of the host function's stream", func() error { return libcuda.StreamQuery(raw) }, libcuda.CUDA_ERROR_NOT_READY},
		{"cuEventQuery of an event recorded after it", func() error { return libcuda.EventQuery(after) }, libcuda.CUDA_ERROR_NOT_READY},
		{"cuStreamGetCtx", func() error { return libcuda.StreamGetCtx(raw, &c) }, nil},
		{"cuStreamGetId", func() error { return libcuda.StreamGetId(raw, &id) }, nil},
		{"cuStreamIsCapturing", func() error { return libcuda.StreamIsCapturing(raw, &status) }, nil},
		{"cuStreamGetCaptureInfo", func() error { return libcuda.StreamGetCaptureInfo(raw, &status, nil, nil, nil, nil, nil) }, nil},
		{"cuCtxGetCurrent", func() error { return libcuda.CtxGetCurrent(&c) }, nil},
		{"cuCtxSetCurrent", func() error { return libcuda.CtxSetCurrent(cu) }, nil},
		{"cuCtxGetId", func() error { return libcuda.CtxGetId(cu, &id) }, nil},
		{"cuThreadExchangeStreamCaptureMode", func() error {
			m := mode
			if err := libcuda.ThreadExchangeStreamCaptureMode(&m); err != nil {
				return err
			}
			return libcuda.ThreadExchangeStreamCaptureMode(&m)
		}, nil},
		{"cuLaunchKernel on another stream", func() error {
			return fill.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 64}, 0, other, buf, uint64(64), int32(1))
		}, nil},
		{"cuEventRecord on another stream", func() error { return libcuda.EventRecord(after, other) }, nil},
	}
	results := make(chan string, len(probes))
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := libcuda.CtxSetCurrent(cu); err != nil {
			results <- "cuCtxSetCurrent: " + err.Error()
		}
		for _, p := range probes {
			err := p.call()
			switch {
			case p.want == nil && err != nil:
				results <- fmt.Sprintf("%s: %v", p.name, err)
			case p.want != nil && !errors.Is(err, p.want):
				results <- fmt.Sprintf("%s: %v, want %v", p.name, err, p.want)
			default:
				results <- ""
			}
		}
	}()
	timer := time.NewTimer(testenv.Timeout)
	defer timer.Stop()
	for i := range probes {
		select {
		case r := <-results:
			if r != "" {
				t.Error(r)
			}
		case <-timer.C:
			t.Errorf("%s did not return while the host function ran (it waits for host functions)", probes[i].name)
			let()
			if r := testenv.Recv(t, results, probes[i].name+" after the host function ended"); r != "" {
				t.Error(r)
			}
			timer.Reset(testenv.Timeout) // each later probe is bounded too
		}
	}
	let()
	testenv.MustBounded(t, "s.Sync", func() error { return s.Sync(testenv.Context(t)) })
	testenv.Must(t, libcuda.StreamSynchronize(other))
}
