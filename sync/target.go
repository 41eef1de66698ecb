package sync

import (
	"errors"
	"fmt"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
)

// streamTarget is the work submitted to a stream so far.
type streamTarget struct {
	cu libcuda.Context // the stream's context; 0 when not given
	s  libcuda.Stream
}

func (t streamTarget) String() string {
	switch t.s {
	case 0, libcuda.CU_STREAM_LEGACY:
		return "legacy stream"
	case libcuda.CU_STREAM_PER_THREAD:
		return "per-thread stream"
	}
	return fmt.Sprintf("stream %#x", uintptr(t.s))
}

func (t streamTarget) legacy() bool { return t.s == 0 || t.s == libcuda.CU_STREAM_LEGACY }

func (t streamTarget) query(check bool) error {
	if t.legacy() {
		// The legacy stream is the current context's: make cu current.
		return libcuda.WithContext(t.cu, func() error { return t.checkedQuery(check) })
	}
	return t.checkedQuery(check)
}

// checkedQuery queries the stream; with check, it refuses a stream under
// capture first. The check is needed only while captures are known to be
// in progress. The per-thread stream is checked too: it is queried on the
// caller's thread, whose own capture of it the query would end.
func (t streamTarget) checkedQuery(check bool) error {
	if check {
		capturing, err := Capturing(t.s)
		if err != nil {
			return err
		}
		if capturing {
			return &captureError{what: t.String(), err: errors.New("the stream is being captured")}
		}
	}
	if err := libcuda.StreamQuery(t.s); err != nil {
		return named("cuStreamQuery", err)
	}
	return nil
}

// block records an event that sleeps its waiter (CU_EVENT_BLOCKING_SYNC)
// on the stream and waits for it, with the stream's context current.
func (t streamTarget) block() error {
	cu := t.cu
	if cu == 0 {
		if err := libcuda.StreamGetCtx(t.s, &cu); err != nil {
			return dl.Failed("", "cuStreamGetCtx", err)
		}
	}
	if err := libcuda.CtxSetCurrent(cu); err != nil {
		return dl.Failed("", "cuCtxSetCurrent", err)
	}
	if err := t.checkedQuery(CapturesInProgress() > 0); err == nil || !isNotReady(err) {
		return err
	}
	var e libcuda.Event
	if err := libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_BLOCKING_SYNC|libcuda.CU_EVENT_DISABLE_TIMING)); err != nil {
		return dl.Failed("", "cuEventCreate", err)
	}
	err := libcuda.EventRecord(e, t.s)
	if err != nil {
		err = dl.Failed("", "cuEventRecord", err)
	} else if err = libcuda.EventSynchronize(e); err != nil {
		err = dl.Failed("", "cuEventSynchronize", err)
	}
	if derr := libcuda.EventDestroy(e); derr != nil {
		err = errors.Join(err, dl.Failed("", "cuEventDestroy", derr))
	}
	return err
}

// eventTarget is an event's completion.
type eventTarget libcuda.Event

func (t eventTarget) String() string { return fmt.Sprintf("event %#x", uintptr(t)) }
func (t eventTarget) query(bool) error {
	if err := libcuda.EventQuery(libcuda.Event(t)); err != nil {
		return named("cuEventQuery", err)
	}
	return nil
}

func (t eventTarget) block() error {
	if err := libcuda.EventSynchronize(libcuda.Event(t)); err != nil {
		return dl.Failed("", "cuEventSynchronize", err)
	}
	return nil
}

// contextTarget is all work of a context.
type contextTarget libcuda.Context

func (t contextTarget) String() string { return fmt.Sprintf("context %#x", uintptr(t)) }

// query is never used for a context: cuCtxSynchronize cannot poll.
func (t contextTarget) query(bool) error { return libcuda.CUDA_ERROR_NOT_READY }

// block synchronizes the context. cuCtxSynchronize is refused during any
// capture, even in relaxed mode, so it is made only when admitSync admits
// it, and counts as in flight from then until it returns: a capture start
// waits for it until it is inside the driver (see ctxsync.go).
func (t contextTarget) block() error {
	if err := libcuda.CtxSetCurrent(libcuda.Context(t)); err != nil {
		return dl.Failed("", "cuCtxSetCurrent", err)
	}
	c, ok := admitSync()
	if !ok {
		return &captureError{what: t.String(), err: fmt.Errorf("%d captures in progress", CapturesInProgress())}
	}
	defer c.done()
	if hook := syncHook.Load(); hook != nil {
		(*hook)()
	}
	if err := libcuda.CtxSynchronize(); err != nil {
		if errors.Is(err, libcuda.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) {
			// A capture began before the call passed the driver's check:
			// the call took longer than ctxSyncEntry to get there.
			syncsRefused.Add(1)
		}
		return dl.Failed("", "cuCtxSynchronize", err)
	}
	return nil
}

func isNotReady(err error) bool { return err == libcuda.CUDA_ERROR_NOT_READY }

// named names the driver call that failed (dl.Failed), except
// CUDA_ERROR_NOT_READY, which the waits test for and which stays the bare
// Result (no allocation).
func named(call string, err error) error {
	if err == nil || isNotReady(err) {
		return err
	}
	return dl.Failed("", call, err)
}
