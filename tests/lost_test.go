package tests

import (
	"context"
	"errors"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// After a kernel fault, the errors of every package under cuda match
// libcuda.ErrContextLost where they come back: sync's waits (of the
// faulting stream, another stream, an event done before the fault, the
// context), graph's capture and launch, hostmem's Wrap; hostmem's Drain
// still returns. In a child process: the fault loses the device.
func TestLostContextErrorsMatchErrContextLostInEveryPackage(t *testing.T) {
	if !testenv.InChild(t) {
		return
	}
	testenv.CaptureErrors(t) // the loss is logged once; not this test's subject
	f := testenv.NewFault(t)
	cu, s, bad, d := f.Ctx, f.Stream, f.Bad, f.Mem
	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error { return libcuda.MemsetD8Async(d, 1, 64, s) })
	testenv.Must(t, err)
	e, err := g.Instantiate()
	testenv.Must(t, err)
	var ev libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	testenv.Must(t, libcuda.EventRecord(ev, s))
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	testenv.Must(t, sync.Stream(ctx, cu, s))

	f.Launch(t)
	errs := map[string]error{
		"sync.Stream of the faulting stream": sync.Stream(ctx, cu, bad),
		"sync.Stream of another stream":      sync.Stream(ctx, cu, s),
		"sync.Event of an event done before": sync.Event(ctx, ev),
		"sync.Context":                       sync.Context(ctx, cu),
		"graph.Exec.Launch":                  e.Launch(s),
	}
	_, errs["graph.Capture"] = graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error { return libcuda.MemsetD8Async(d, 2, 64, s) })
	_, errs["hostmem.Wrap"] = hostmem.Wrap(cu, make([]byte, 4096))
	for name, err := range errs {
		if !errors.Is(err, libcuda.ErrContextLost) {
			t.Errorf("%s after the fault = %v, want an error matching libcuda.ErrContextLost", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	if err := hostmem.Drain(ctx); err != nil {
		t.Errorf("hostmem.Drain after the fault: %v, want it to return", err)
	}
}
