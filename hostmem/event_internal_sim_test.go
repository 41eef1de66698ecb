//go:build !gpu

package hostmem

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// An event that cuEventCreate made is used even when giving the thread its
// context back failed after it: getEvent returns it, and nothing leaks.
// The events are of a context of the test's own (no pooled event of it
// exists) while the primary context is current on the thread, so that
// getEvent switches to it (the first cuCtxSetCurrent) and back (the
// second, which fails).
func TestEventMadeBeforeAFailedContextRestoreIsUsed(t *testing.T) {
	testenv.OnPrimary(t, 0)
	var dev libcuda.Device
	testenv.Must(t, libcuda.CtxGetDevice(&dev))
	var other, popped libcuda.Context
	testenv.Must(t, libcuda.CtxCreate(&other, nil, 0, dev))
	testenv.Must(t, libcuda.CtxPopCurrent(&popped))
	t.Cleanup(func() { testenv.Must(t, libcuda.CtxDestroy(other)) })
	k := ctxKey{ctx: other}
	testenv.Must(t, libcuda.CtxGetId(other, &k.id))
	// A first event, so that what getEvent learns of the context once
	// (its device) is known before the failure is armed.
	ev, h, err := getEvent(k)
	testenv.Must(t, err)
	destroyEvent(ev, h)
	logged := testenv.CaptureErrors(t)

	events := testenv.SimStat(t, "live_events")
	testenv.SimFailAfter(t, "cuCtxSetCurrent", 1, 1, libcuda.CUDA_ERROR_UNKNOWN)
	ev, h, err = getEvent(k)
	testenv.SimFailNext(t, "cuCtxSetCurrent", 0, 0) // disarm, had it not fired
	if err != nil {
		t.Fatalf("getEvent = %v, want the event the driver made", err)
	}
	if n := testenv.SimStat(t, "live_events"); n != events+1 || ev == 0 {
		t.Fatalf("event %#x, %d live events, want one more than %d", uintptr(ev), n, events)
	}
	if msgs := logged.Messages(); len(msgs) != 1 {
		t.Errorf("logged %q, want the failed restore once", msgs)
	}
	destroyEvent(ev, h)
	if n := testenv.SimStat(t, "live_events"); n != events {
		t.Errorf("%d live events after destroying it, want %d", n, events)
	}
}

// Kept events are told apart by their context's unique id as well as its
// handle (issue 23 item 4): an event kept for the primary context under an
// id that is no longer the context's (the handle of a primary context
// reset and made again) is not handed to a use of the context with its
// current id.
func TestKeptEventsOfAnotherContextIDAreNotReused(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	flushEvents()
	k := ctxKey{ctx: cu}
	testenv.Must(t, libcuda.CtxGetId(cu, &k.id))
	stale, h, err := getEvent(ctxKey{cu, k.id + 1000})
	testenv.Must(t, err)
	if !h.primary {
		t.Fatal("the primary context's event holds no primary context: it would not be kept")
	}
	putEvent(use{ctx: cu, ctxID: k.id + 1000, ev: stale, hold: h})
	ev, h2, err := getEvent(k)
	testenv.Must(t, err)
	if ev == stale {
		t.Errorf("getEvent for the context's id %d returned the event kept under id %d", k.id, k.id+1000)
	}
	putEvent(use{ctx: cu, ctxID: k.id, ev: ev, hold: h2})
	flushEvents()
}
