package sync

import (
	"context"
	"runtime"
	"time"

	"github.com/purecuda/purecuda/libcuda"
)

// MaxHelpers bounds the helper OS threads that block in the driver on
// behalf of waiters. Waiters beyond it poll until a helper is free.
const MaxHelpers = 8

// helperIdle is how long an idle helper thread lives before it exits.
const helperIdle = 2 * time.Second

type job struct {
	t   target
	res chan error // buffered: a cancelled waiter never blocks a helper
}

// pool runs blocking waits on helper goroutines, each locked to its own
// OS thread in relaxed capture mode. busy bounds the jobs in progress; a
// helper that finishes one waits helperIdle for the next, then exits,
// taking its thread with it (it never unlocks).
type pool struct {
	busy chan struct{}
	jobs chan job
}

var helpers = &pool{busy: make(chan struct{}, MaxHelpers), jobs: make(chan job)}

// submit starts j on a helper if fewer than MaxHelpers are busy.
func (p *pool) submit(j job) bool {
	select {
	case p.busy <- struct{}{}:
	default:
		return false
	}
	p.start(j)
	return true
}

// submitWait starts j on a helper as soon as one is free, or returns
// ctx's error.
func (p *pool) submitWait(ctx context.Context, j job) error {
	select {
	case p.busy <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.start(j)
	return nil
}

func (p *pool) start(j job) {
	select {
	case p.jobs <- j: // an idle helper took it
	default:
		go p.helper(j)
	}
}

func (p *pool) helper(j job) {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	mode := libcuda.CU_STREAM_CAPTURE_MODE_RELAXED
	modeErr := libcuda.ThreadExchangeStreamCaptureMode(&mode)
	idle := time.NewTimer(helperIdle)
	defer idle.Stop()
	for {
		if modeErr != nil {
			j.res <- modeErr
		} else {
			j.res <- j.t.block()
		}
		<-p.busy
		idle.Reset(helperIdle)
		select {
		case j = <-p.jobs:
		case <-idle.C:
			return
		}
	}
}
