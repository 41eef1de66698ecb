package tests

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// The conformance tests state what the driver does in the cases the release
// logic depends on, and print it as a matrix. They run on the simulator and
// on the GPU: passing on the GPU is what keeps the simulator honest.

// code is the CUresult of err, or -1 for an error that is not a Result.
func code(err error) int {
	if err == nil {
		return 0
	}
	var r libcuda.Result
	if errors.As(err, &r) {
		return int(r)
	}
	return -1
}

// hostBuffer returns n bytes of Go memory starting on a 4 KiB boundary,
// kept alive until the test ends.
func hostBuffer(t testing.TB, n int) unsafe.Pointer {
	b := make([]byte, n+4096)
	t.Cleanup(func() { runtime.KeepAlive(b) })
	p := unsafe.Pointer(&b[0])
	return unsafe.Add(p, (4096-uintptr(p)%4096)%4096)
}

// capCall is one driver call of the capture matrix. prep runs before the
// capture begins and returns the call and what to do after the capture
// has ended (given whether the call succeeded).
type capCall struct {
	name   string
	unsafe bool // a "potentially unsafe" call in the driver's capture rules
	prep   func(t *testing.T) (call func() error, after func(ok bool))
}

func captureCalls(other libcuda.Stream, dev libcuda.Deviceptr, pinned unsafe.Pointer) []capCall {
	noAfter := func(bool) {}
	var recorded libcuda.Event
	return []capCall{
		{"cuStreamQuery(other)", true, func(t *testing.T) (func() error, func(bool)) {
			return func() error { return libcuda.StreamQuery(other) }, noAfter
		}},
		{"cuStreamSynchronize(other)", true, func(t *testing.T) (func() error, func(bool)) {
			return func() error { return libcuda.StreamSynchronize(other) }, noAfter
		}},
		{"cuStreamQuery(legacy)", true, func(t *testing.T) (func() error, func(bool)) {
			return func() error { return libcuda.StreamQuery(libcuda.CU_STREAM_LEGACY) }, noAfter
		}},
		{"cuEventQuery", true, func(t *testing.T) (func() error, func(bool)) {
			testenv.Must(t, libcuda.EventCreate(&recorded, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
			testenv.Must(t, libcuda.EventRecord(recorded, other))
			testenv.Must(t, libcuda.StreamSynchronize(other))
			return func() error { return libcuda.EventQuery(recorded) },
				func(bool) { testenv.Must(t, libcuda.EventDestroy(recorded)) }
		}},
		{"cuEventSynchronize", true, func(t *testing.T) (func() error, func(bool)) {
			testenv.Must(t, libcuda.EventCreate(&recorded, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
			testenv.Must(t, libcuda.EventRecord(recorded, other))
			testenv.Must(t, libcuda.StreamSynchronize(other))
			return func() error { return libcuda.EventSynchronize(recorded) },
				func(bool) { testenv.Must(t, libcuda.EventDestroy(recorded)) }
		}},
		{"cuMemHostRegister", true, func(t *testing.T) (func() error, func(bool)) {
			p := hostBuffer(t, 4096)
			return func() error { return libcuda.MemHostRegister(p, 4096, 0) },
				func(ok bool) {
					if ok {
						testenv.Must(t, libcuda.MemHostUnregister(p))
					}
				}
		}},
		{"cuMemHostUnregister", true, func(t *testing.T) (func() error, func(bool)) {
			p := hostBuffer(t, 4096)
			testenv.Must(t, libcuda.MemHostRegister(p, 4096, 0))
			return func() error { return libcuda.MemHostUnregister(p) },
				func(ok bool) {
					if !ok {
						testenv.Must(t, libcuda.MemHostUnregister(p))
					}
				}
		}},
		{"cuMemAlloc", true, func(t *testing.T) (func() error, func(bool)) {
			var d libcuda.Deviceptr
			return func() error { return libcuda.MemAlloc(&d, 4096) },
				func(ok bool) {
					if ok {
						testenv.Must(t, libcuda.MemFree(d))
					}
				}
		}},
		{"cuMemFree", true, func(t *testing.T) (func() error, func(bool)) {
			var d libcuda.Deviceptr
			testenv.Must(t, libcuda.MemAlloc(&d, 4096))
			return func() error { return libcuda.MemFree(d) },
				func(ok bool) {
					if !ok {
						testenv.Must(t, libcuda.MemFree(d))
					}
				}
		}},
		{"cuCtxSynchronize", true, func(t *testing.T) (func() error, func(bool)) {
			return libcuda.CtxSynchronize, noAfter
		}},
		{"cuEventRecord(other)", false, func(t *testing.T) (func() error, func(bool)) {
			testenv.Must(t, libcuda.EventCreate(&recorded, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
			return func() error { return libcuda.EventRecord(recorded, other) },
				func(bool) { testenv.Must(t, libcuda.EventDestroy(recorded)) }
		}},
		{"cuStreamCreate+Destroy", false, func(t *testing.T) (func() error, func(bool)) {
			return func() error {
				var s libcuda.Stream
				if err := libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
					return err
				}
				return libcuda.StreamDestroy(s)
			}, noAfter
		}},
		{"cuEventCreate+Destroy", false, func(t *testing.T) (func() error, func(bool)) {
			return func() error {
				var e libcuda.Event
				if err := libcuda.EventCreate(&e, 0); err != nil {
					return err
				}
				return libcuda.EventDestroy(e)
			}, noAfter
		}},
		{"cuMemHostGetFlags", false, func(t *testing.T) (func() error, func(bool)) {
			var f uint32
			return func() error { return libcuda.MemHostGetFlags(&f, pinned) }, noAfter
		}},
		{"cuStreamIsCapturing(other)", false, func(t *testing.T) (func() error, func(bool)) {
			var st libcuda.StreamCaptureStatus
			return func() error { return libcuda.StreamIsCapturing(other, &st) }, noAfter
		}},
		{"cuStreamGetCtx(other)", false, func(t *testing.T) (func() error, func(bool)) {
			var c libcuda.Context
			return func() error { return libcuda.StreamGetCtx(other, &c) }, noAfter
		}},
		{"cuStreamGetId(other)", false, func(t *testing.T) (func() error, func(bool)) {
			var id uint64
			return func() error { return libcuda.StreamGetId(other, &id) }, noAfter
		}},
		{"cuMemcpyHtoDAsync(other)", false, func(t *testing.T) (func() error, func(bool)) {
			return func() error { return libcuda.MemcpyHtoDAsync(dev, pinned, 64, other) },
				func(bool) { testenv.Must(t, libcuda.StreamSynchronize(other)) }
		}},
	}
}

var captureModes = []libcuda.StreamCaptureMode{
	libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL,
	libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
	libcuda.CU_STREAM_CAPTURE_MODE_RELAXED,
}

func modeName(m libcuda.StreamCaptureMode) string {
	return strings.ToLower(strings.TrimPrefix(m.String(), "CU_STREAM_CAPTURE_MODE_"))
}

// expectCapture gives the documented answer: the call's code and whether
// the capture is invalidated (its end then returns 901).
func expectCapture(c capCall, capMode libcuda.StreamCaptureMode, own bool, threadMode libcuda.StreamCaptureMode) (int, bool) {
	if !c.unsafe {
		return 0, false
	}
	if c.name == "cuCtxSynchronize" {
		return 900, true // refused during any capture, in any mode
	}
	relaxed := threadMode == libcuda.CU_STREAM_CAPTURE_MODE_RELAXED
	prohibited := own && capMode != libcuda.CU_STREAM_CAPTURE_MODE_RELAXED && !relaxed ||
		!own && threadMode == libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL && capMode == libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL
	if prohibited {
		return 900, true
	}
	return 0, false
}

func TestConformanceCaptureMatrix(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	other := testenv.NewStream(t)
	captured := testenv.NewStream(t)
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, 4096))
	defer func() { testenv.Must(t, libcuda.MemFree(dev)) }()
	var pinned unsafe.Pointer
	testenv.Must(t, libcuda.MemHostAlloc(&pinned, 4096, uint32(libcuda.CU_MEMHOSTALLOC_PORTABLE)))
	defer func() { testenv.Must(t, libcuda.MemFreeHost(pinned)) }()
	th := testenv.NewOSThread(t, cu)

	var rows []string
	rows = append(rows, fmt.Sprintf("%-13s %-6s %-13s %-28s %5s %5s", "capture", "caller", "caller mode", "call", "code", "end"))
	for _, capMode := range captureModes {
		for _, own := range []bool{true, false} {
			for _, threadMode := range captureModes {
				for _, c := range captureCalls(other, dev, pinned) {
					call, after := c.prep(t)
					testenv.Must(t, libcuda.StreamBeginCapture(captured, capMode))
					testenv.Must(t, libcuda.MemsetD8Async(dev, 1, 64, captured))
					var got int
					run := func() { testenv.WithMode(t, threadMode, func() { got = code(call()) }) }
					if own {
						run()
					} else {
						th.Do(run)
					}
					var graph libcuda.Graph
					end := code(libcuda.StreamEndCapture(captured, &graph))
					if graph != 0 {
						testenv.Must(t, libcuda.GraphDestroy(graph))
					}
					after(got == 0)

					where := "other"
					if own {
						where = "own"
					}
					rows = append(rows, fmt.Sprintf("%-13s %-6s %-13s %-28s %5d %5d", modeName(capMode), where, modeName(threadMode), c.name, got, end))
					wantCode, invalidated := expectCapture(c, capMode, own, threadMode)
					wantEnd := 0
					if invalidated {
						wantEnd = 901
					}
					if got != wantCode || end != wantEnd {
						t.Errorf("%s capture, %s thread in %s mode, %s: got %d and end %d, want %d and end %d",
							modeName(capMode), where, modeName(threadMode), c.name, got, end, wantCode, wantEnd)
					}
				}
			}
		}
	}
	t.Log("capture matrix (code: the call's CUresult; end: cuStreamEndCapture's)\n" + strings.Join(rows, "\n"))
}

func TestConformanceCaptureSpecialCases(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, 4096))
	defer func() { testenv.Must(t, libcuda.MemFree(dev)) }()
	th := testenv.NewOSThread(t, cu)
	relaxed := libcuda.CU_STREAM_CAPTURE_MODE_RELAXED
	var rows []string
	check := func(what string, got, want int) {
		rows = append(rows, fmt.Sprintf("%-58s %5d", what, got))
		if got != want {
			t.Errorf("%s: got %d, want %d", what, got, want)
		}
	}
	end := func(s libcuda.Stream) int {
		var g libcuda.Graph
		r := code(libcuda.StreamEndCapture(s, &g))
		if g != 0 {
			testenv.Must(t, libcuda.GraphDestroy(g))
		}
		return r
	}

	// Work on the legacy stream while a blocking stream is captured.
	var blocking libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&blocking, 0))
	defer func() { testenv.Must(t, libcuda.StreamDestroy(blocking)) }()
	testenv.Must(t, libcuda.StreamBeginCapture(blocking, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL))
	testenv.WithMode(t, relaxed, func() {
		check("legacy-stream memset during a blocking stream's capture", code(libcuda.MemsetD8Async(dev, 0, 64, libcuda.CU_STREAM_LEGACY)), 906)
	})
	check("  end of that capture", end(blocking), 901)

	// An event recorded in a capture: querying or synchronizing it fails
	// and invalidates the capture.
	s := testenv.NewStream(t)
	var e libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	defer func() { testenv.Must(t, libcuda.EventDestroy(e)) }()
	for _, synchronize := range []bool{false, true} {
		testenv.Must(t, libcuda.StreamBeginCapture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL))
		testenv.Must(t, libcuda.MemsetD8Async(dev, 0, 64, s))
		testenv.Must(t, libcuda.EventRecord(e, s))
		if !synchronize {
			testenv.WithMode(t, relaxed, func() {
				check("cuEventQuery of an event recorded in the capture", code(libcuda.EventQuery(e)), 907)
			})
			check("  end of that capture", end(s), 901)
			continue
		}
		testenv.WithMode(t, relaxed, func() {
			check("cuEventSynchronize of an event recorded in the capture", code(libcuda.EventSynchronize(e)), 907)
		})
		check("  end of that capture", end(s), 901)
	}

	// cuStreamGetId of the stream being captured, on its own thread: on the
	// H200 it failed with 900 and invalidated a global-mode capture.
	for _, m := range captureModes {
		testenv.Must(t, libcuda.StreamBeginCapture(s, m))
		testenv.Must(t, libcuda.MemsetD8Async(dev, 0, 64, s))
		var id uint64
		check(fmt.Sprintf("cuStreamGetId of the stream in a %s capture", modeName(m)), code(libcuda.StreamGetId(s, &id)), 900)
		check("  end of that capture", end(s), 901)
	}

	// Ending a capture from another thread.
	for _, m := range captureModes {
		testenv.Must(t, libcuda.StreamBeginCapture(s, m))
		testenv.Must(t, libcuda.MemsetD8Async(dev, 0, 64, s))
		var got int
		var g libcuda.Graph
		th.Do(func() { got = code(libcuda.StreamEndCapture(s, &g)) })
		want := 908
		if m == relaxed {
			want = 0
		}
		check(fmt.Sprintf("cuStreamEndCapture of a %s capture from another thread", modeName(m)), got, want)
		if got == 0 {
			if g != 0 {
				testenv.Must(t, libcuda.GraphDestroy(g))
			}
			continue
		}
		// The refused end leaves the capture unusable: ending it on its own
		// thread then fails with CUDA_ERROR_ILLEGAL_STATE, and ends it.
		check("  end from the capturing thread", end(s), 401)
		var st libcuda.StreamCaptureStatus
		testenv.Must(t, libcuda.StreamIsCapturing(s, &st))
		check("  capture status after that", int(st), 0)
	}
	t.Log("capture special cases\n" + strings.Join(rows, "\n"))
}

func TestConformanceRegisterCodes(t *testing.T) {
	testenv.OnPrimary(t, 0)
	p := hostBuffer(t, 4*4096)
	at := func(off int) unsafe.Pointer { return unsafe.Add(p, off) }
	var rows []string
	check := func(what string, err error, want int) {
		got := code(err)
		rows = append(rows, fmt.Sprintf("%-52s %5d", what, got))
		if got != want {
			t.Errorf("%s: got %d, want %d", what, got, want)
		}
	}
	check("register [0,4096)", libcuda.MemHostRegister(at(0), 4096, 0), 0)
	check("register it again (identical)", libcuda.MemHostRegister(at(0), 4096, 0), 712)
	check("register [100,200) (inside)", libcuda.MemHostRegister(at(100), 100, 0), 712)
	check("register [2048,6144) (partial overlap)", libcuda.MemHostRegister(at(2048), 4096, 0), 712)
	check("register [4096,8192) (adjacent)", libcuda.MemHostRegister(at(4096), 4096, 0), 0)
	check("register [8192,8292) (one page, first range)", libcuda.MemHostRegister(at(8192), 100, 0), 0)
	check("register [8392,8492) (same page, disjoint)", libcuda.MemHostRegister(at(8392), 100, 0), 0)
	var d libcuda.Deviceptr
	check("cuMemHostGetDevicePointer inside [0,4096)", libcuda.MemHostGetDevicePointer(&d, at(100), 0), 0)
	if d != libcuda.Deviceptr(uintptr(at(100))) {
		t.Errorf("device pointer %#x differs from the host pointer %p", d, at(100))
	}
	check("register length 0", libcuda.MemHostRegister(at(12288), 0, 0), 1)
	check("register NULL", libcuda.MemHostRegister(nil, 4096, 0), 1)
	check("unregister an interior address (+100)", libcuda.MemHostUnregister(at(100)), 1)
	check("unregister an unknown address", libcuda.MemHostUnregister(at(12288)), 713)
	check("unregister [0,4096)", libcuda.MemHostUnregister(at(0)), 0)
	check("unregister [0,4096) again", libcuda.MemHostUnregister(at(0)), 713)
	check("unregister [4096,8192)", libcuda.MemHostUnregister(at(4096)), 0)
	check("unregister [8192,8292)", libcuda.MemHostUnregister(at(8192)), 0)
	check("unregister [8392,8492)", libcuda.MemHostUnregister(at(8392)), 0)
	t.Log("register and unregister codes\n" + strings.Join(rows, "\n"))
}

func TestConformanceStreamAndEventSemantics(t *testing.T) {
	testenv.OnPrimary(t, 0)
	var rows []string
	check := func(what string, got, want int) {
		rows = append(rows, fmt.Sprintf("%-60s %5d", what, got))
		if got != want {
			t.Errorf("%s: got %d, want %d", what, got, want)
		}
	}

	// A stream held by a wait on a host word.
	g := testenv.NewGate(t)
	s := testenv.NewStream(t)
	g.Hold(t, s)
	var e libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	defer func() { testenv.Must(t, libcuda.EventDestroy(e)) }()
	testenv.Must(t, libcuda.EventRecord(e, s))
	check("cuStreamQuery of a stream held by cuStreamWaitValue32", code(libcuda.StreamQuery(s)), 600)
	check("cuEventQuery of an event recorded after the hold", code(libcuda.EventQuery(e)), 600)
	g.Open()
	check("cuStreamSynchronize after the host writes the value", code(libcuda.StreamSynchronize(s)), 0)
	check("cuEventQuery then", code(libcuda.EventQuery(e)), 0)

	// An event outlives the stream it was recorded on.
	g2 := testenv.NewGate(t)
	var s2 libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&s2, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	g2.Hold(t, s2)
	testenv.Must(t, libcuda.EventRecord(e, s2))
	check("cuStreamDestroy of a stream with work pending", code(libcuda.StreamDestroy(s2)), 0)
	check("cuEventQuery of its event", code(libcuda.EventQuery(e)), 600)
	time.AfterFunc(20*time.Millisecond, g2.Open)
	check("cuEventSynchronize of it once the work ends", code(libcuda.EventSynchronize(e)), 0)
	if atomic.LoadUint32((*uint32)(g2.Host())) != 1 {
		t.Error("cuEventSynchronize returned before the work it waits for could end")
	}
	t.Log("stream and event semantics\n" + strings.Join(rows, "\n"))
}

// TestConformanceUnregisterFencesTheDevice checks decision 7's premise: an
// unregister (and a free) waits for all work in flight on the device, and
// launches from other threads wait meanwhile. It asserts the order of
// events, not durations: neither call returns before the test opens the
// gate that holds the device's work.
func TestConformanceUnregisterFencesTheDevice(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	m := testenv.LoadKernels(t)
	spin := testenv.Kernel(t, m, "spin")
	busy := testenv.NewStream(t)
	launchStream := testenv.NewStream(t)
	th := testenv.NewOSThread(t, cu)
	opThread := testenv.NewOSThread(t, cu)

	for _, op := range []string{"cuMemHostUnregister", "cuMemFree"} {
		p := hostBuffer(t, 4096)
		testenv.Must(t, libcuda.MemHostRegister(p, 4096, 0))
		var d libcuda.Deviceptr
		testenv.Must(t, libcuda.MemAlloc(&d, 4096))
		g := testenv.NewGate(t)
		g.Hold(t, busy)

		// opened is set just before the gate opens: a call that returns
		// with it unset returned while the device's work was held.
		var opened atomic.Bool
		fences, _ := testenv.Stat(t, "fences")
		opDone := make(chan bool, 1)
		opErr := make(chan error, 1)
		go opThread.Do(func() {
			var err error
			if op == "cuMemHostUnregister" {
				err = libcuda.MemHostUnregister(p)
			} else {
				err = libcuda.MemFree(d)
			}
			opDone <- opened.Load()
			opErr <- err
		})
		testenv.WaitStat(t, op+" to begin its fence", "fences", fences)
		fenced, _ := testenv.Stat(t, "fenced_calls")
		launchDone := make(chan bool, 1)
		go th.Do(func() {
			if err := spin.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 1}, 0, launchStream, uint64(0)); err != nil {
				t.Error(err)
			}
			launchDone <- opened.Load()
		})
		testenv.WaitStat(t, "the launch from another thread to reach the fence", "fenced_calls", fenced)
		select {
		case <-opDone:
			t.Errorf("%s returned while a stream's work was held", op)
		case <-launchDone:
			t.Errorf("a launch from another thread returned during %s, while the held work ran", op)
		default:
		}
		opened.Store(true)
		g.Open()
		if !testenv.Recv(t, opDone, op+" to return") {
			t.Errorf("%s returned before the held work was let go", op)
		}
		testenv.Must(t, testenv.Recv(t, opErr, op+"'s result"))
		if !testenv.Recv(t, launchDone, "the launch from another thread") {
			t.Errorf("a launch from another thread during %s returned before the fence let go", op)
		}
		if op == "cuMemHostUnregister" {
			testenv.Must(t, libcuda.MemFree(d))
		} else {
			testenv.Must(t, libcuda.MemHostUnregister(p))
		}
		testenv.Must(t, libcuda.StreamSynchronize(busy))
		testenv.Must(t, libcuda.StreamSynchronize(launchStream))
	}
}

// TestConformanceDestroyedHandlesComeBack checks that the driver reuses
// the handles of destroyed streams and events, as an allocator reuses
// addresses: per-stream state keyed by a handle would then be confused
// with a new stream's. It asserts that a value recurs, not when.
func TestConformanceDestroyedHandlesComeBack(t *testing.T) {
	testenv.OnPrimary(t, 0)
	const tries = 10_000
	streams := map[libcuda.Stream]bool{}
	events := map[libcuda.Event]bool{}
	streamAfter, eventAfter := 0, 0
	for i := 1; i <= tries && (streamAfter == 0 || eventAfter == 0); i++ {
		if streamAfter == 0 {
			var s libcuda.Stream
			testenv.Must(t, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
			if streams[s] {
				streamAfter = i
			}
			streams[s] = true
			testenv.Must(t, libcuda.StreamDestroy(s))
		}
		if eventAfter == 0 {
			var e libcuda.Event
			testenv.Must(t, libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
			if events[e] {
				eventAfter = i
			}
			events[e] = true
			testenv.Must(t, libcuda.EventDestroy(e))
		}
	}
	if streamAfter == 0 {
		t.Errorf("no stream handle came back in %d creations after destroys", tries)
	}
	if eventAfter == 0 {
		t.Errorf("no event handle came back in %d creations after destroys", tries)
	}
	t.Logf("a destroyed stream's handle came back at creation %d, an event's at %d", streamAfter, eventAfter)
}

// TestConformanceEventRecordNeedsTheStreamsContext checks what cuda.h says
// of cuEventRecord: the event and the stream must be from the same
// context, else CUDA_ERROR_INVALID_HANDLE (hostmem records on a stream an
// event of that stream's context, found by the stream's unique id).
func TestConformanceEventRecordNeedsTheStreamsContext(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	var e libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(e)) })
	var dev libcuda.Device
	testenv.Must(t, libcuda.CtxGetDevice(&dev))
	var other libcuda.Context
	testenv.Must(t, libcuda.CtxCreate(&other, nil, 0, dev))
	t.Cleanup(func() { testenv.Must(t, libcuda.CtxDestroy(other)) })
	// CtxCreate made other current; streams created now belong to it.
	s := testenv.NewStream(t)
	if got := code(libcuda.EventRecord(e, s)); got != 400 {
		t.Errorf("cuEventRecord of an event on a stream of another context = %d, want 400", got)
	}
	testenv.Must(t, libcuda.CtxSetCurrent(cu))
	s0 := testenv.NewStream(t)
	testenv.Must(t, libcuda.EventRecord(e, s0))
}

// TestConformanceLaunchRunsInTheStreamsContext checks the driver fact that
// package cuda's launches rely on (DESIGN.md, driver facts): cuLaunchKernel
// on a non-NULL stream runs the kernel in the stream's context whatever
// context is current on the calling thread, none included, so a launch on
// such a stream needs no cuCtxGetCurrent or cuCtxSetCurrent of its own.
func TestConformanceLaunchRunsInTheStreamsContext(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	fill := testenv.Kernel(t, testenv.LoadKernels(t), "fill_i32")
	s := testenv.NewStream(t)
	var buf libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&buf, 64*4))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemFree(buf)) })
	var dev libcuda.Device
	testenv.Must(t, libcuda.CtxGetDevice(&dev))
	var other libcuda.Context
	testenv.Must(t, libcuda.CtxCreate(&other, nil, 0, dev))
	t.Cleanup(func() { testenv.Must(t, libcuda.CtxDestroy(other)) })
	testenv.Must(t, libcuda.CtxSetCurrent(cu))
	one, block := libcuda.Dim3{X: 1}, libcuda.Dim3{X: 64}
	for i, c := range []struct {
		name    string
		current libcuda.Context
	}{{"no context current", 0}, {"another context current", other}} {
		value := int32(7 + i)
		testenv.Must(t, libcuda.CtxSetCurrent(c.current))
		lerr := fill.Launch(one, block, 0, s, buf, uint64(64), value)
		serr := libcuda.StreamSynchronize(s)
		testenv.Must(t, libcuda.CtxSetCurrent(cu))
		if lerr != nil || serr != nil {
			t.Errorf("%s: cuLaunchKernel on the stream: %v; cuStreamSynchronize: %v; want both to succeed", c.name, lerr, serr)
			continue
		}
		got := make([]int32, 64)
		testenv.Must(t, libcuda.MemcpyDtoH(unsafe.Pointer(&got[0]), buf, 64*4))
		for j, v := range got {
			if v != value {
				t.Errorf("%s: element %d = %d after the launch, want %d: the kernel did not run in the stream's context", c.name, j, v, value)
				break
			}
		}
	}
	t.Logf("cuLaunchKernel on a non-NULL stream ran in the stream's context with no context current and with another one current")
}
