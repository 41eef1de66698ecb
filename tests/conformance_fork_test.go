package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// A stream that waits for an event recorded in a capture joins that
// capture (fork): the driver reports it as capturing, with the capture's
// id, to its own thread and to others, until the capture ends. Package
// cuda relies on this (cuStreamIsCapturing) to tell that a stream is
// captured, whoever began the capture.
func TestConformanceForkedStreamIsCapturing(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, 4096))
	defer func() { testenv.Must(t, libcuda.MemFree(dev)) }()
	th := testenv.NewOSThread(t, cu)
	origin, forked := testenv.NewStream(t), testenv.NewStream(t)
	var fork, join libcuda.Event
	for _, e := range []*libcuda.Event{&fork, &join} {
		testenv.Must(t, libcuda.EventCreate(e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
		defer func() { testenv.Must(t, libcuda.EventDestroy(*e)) }()
	}
	var rows []string
	check := func(what string, got, want int) {
		t.Helper()
		rows = append(rows, fmt.Sprintf("%-66s %5d", what, got))
		if got != want {
			t.Errorf("%s: got %d, want %d", what, got, want)
		}
	}
	status := func(s libcuda.Stream) int {
		var st libcuda.StreamCaptureStatus
		if err := libcuda.StreamIsCapturing(s, &st); err != nil {
			return -code(err)
		}
		return int(st)
	}
	captureID := func(s libcuda.Stream) uint64 {
		var st libcuda.StreamCaptureStatus
		var id uint64
		testenv.Must(t, libcuda.StreamGetCaptureInfo(s, &st, &id, nil, nil, nil, nil))
		return id
	}
	end := func() int {
		var g libcuda.Graph
		r := code(libcuda.StreamEndCapture(origin, &g))
		if g != 0 {
			testenv.Must(t, libcuda.GraphDestroy(g))
		}
		return r
	}
	active := int(libcuda.CU_STREAM_CAPTURE_STATUS_ACTIVE)

	for _, m := range captureModes {
		name := modeName(m)
		testenv.Must(t, libcuda.StreamBeginCapture(origin, m))
		testenv.Must(t, libcuda.MemsetD8Async(dev, 0, 64, origin))
		testenv.Must(t, libcuda.EventRecord(fork, origin))
		check(fmt.Sprintf("%s: status of a stream before it waits", name), status(forked), 0)
		check(fmt.Sprintf("%s: cuStreamWaitEvent(other stream, event of the capture)", name), code(libcuda.StreamWaitEvent(forked, fork, 0)), 0)
		check(fmt.Sprintf("%s:   status of the forked stream", name), status(forked), active)
		same := 0
		if captureID(forked) == captureID(origin) {
			same = 1
		}
		check(fmt.Sprintf("%s:   its capture id is the origin's", name), same, 1)
		var other int
		th.Do(func() { other = status(forked) })
		check(fmt.Sprintf("%s:   its status asked from another thread (global mode)", name), other, active)
		testenv.Must(t, libcuda.MemsetD8Async(dev+64, 0, 64, forked))
		testenv.Must(t, libcuda.EventRecord(join, forked))
		testenv.Must(t, libcuda.StreamWaitEvent(origin, join, 0))
		check(fmt.Sprintf("%s:   end of the capture, joined", name), end(), 0)
		check(fmt.Sprintf("%s:   status of the forked stream after the end", name), status(forked), 0)
	}

	// Not joined back: the end fails and the forked stream leaves the
	// capture all the same.
	testenv.Must(t, libcuda.StreamBeginCapture(origin, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL))
	testenv.Must(t, libcuda.EventRecord(fork, origin))
	testenv.Must(t, libcuda.StreamWaitEvent(forked, fork, 0))
	testenv.Must(t, libcuda.MemsetD8Async(dev, 0, 64, forked))
	check("end of a capture whose forked stream did not join back", end(), int(libcuda.CUDA_ERROR_STREAM_CAPTURE_UNJOINED))
	check("  status of the forked stream after that", status(forked), 0)
	t.Log("forked streams\n" + strings.Join(rows, "\n"))
}
