package graph

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// withContext runs f on the calling goroutine, locked to its thread, with
// cu current, and makes the thread's previous context current again
// after, as libcuda.WithContext does; an error of its own names the
// driver call.
func withContext(cu libcuda.Context, f func() error) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var prev libcuda.Context
	if err := libcuda.CtxGetCurrent(&prev); err != nil {
		return fmt.Errorf("cuCtxGetCurrent: %w", err)
	}
	if prev != cu {
		if err := libcuda.CtxSetCurrent(cu); err != nil {
			return fmt.Errorf("cuCtxSetCurrent: %w", err)
		}
		defer func() {
			if rerr := libcuda.CtxSetCurrent(prev); rerr != nil {
				err = errors.Join(err, fmt.Errorf("making the thread's context current again: cuCtxSetCurrent: %w", rerr))
			}
		}()
	}
	return f()
}

// inMode runs f with cu current (withContext): in the thread's own
// capture mode while no capture that package sync knows of is in
// progress (captures wait to begin meanwhile), else in relaxed mode. It is
// for calls that must not break a capture but are worth no switch of
// capture mode when none is in progress, which is the common case.
func inMode(cu libcuda.Context, f func() error) error {
	return inModeHere(func() error { return withContext(cu, f) })
}

// inModeHere is inMode for a caller whose goroutine is locked to its
// thread with the right context current already: it makes no driver
// call for the context.
func inModeHere(f func() error) error {
	if ran, err := sync.IfNoCapture(f); ran {
		return err
	}
	return sync.Relaxed(f)
}

// destroyGraph destroys the driver's graph raw as inMode would, without
// a context (cuGraphDestroy needs none).
//
// A destroy that the driver made counts as done even when putting the
// thread's capture mode back failed after it (logged): the graph is gone,
// and its callers would otherwise keep what it held for good.
func destroyGraph(raw libcuda.Graph) error {
	destroyed := false
	destroy := func() error {
		if err := libcuda.GraphDestroy(raw); err != nil {
			return fmt.Errorf("cuGraphDestroy: %w", err)
		}
		destroyed = true
		return nil
	}
	ran, err := sync.IfNoCapture(destroy)
	if !ran {
		err = sync.Relaxed(destroy)
	}
	if destroyed && err != nil {
		slog.Error("graph: graph destroyed, but restoring the thread's capture mode after failed", "err", err)
		return nil
	}
	return err
}

// relaxedIn runs f with cu current (withContext) in relaxed capture mode,
// whether or not a capture is in progress.
func relaxedIn(cu libcuda.Context, f func() error) error {
	return sync.Relaxed(func() error { return withContext(cu, f) })
}
