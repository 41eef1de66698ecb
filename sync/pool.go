package sync

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
)

// MaxHelpers bounds the helper OS threads that block in the driver on
// behalf of waiters that still wait for them. Waiters beyond it poll
// until a helper is free.
const MaxHelpers = 8

// MaxAbandoned bounds the helper threads that still block in the driver
// for waiters that have left (their context ended). A waiter that leaves
// gives its helper's place among the MaxHelpers to later waits, so work
// that never ends cannot starve them, as long as fewer than MaxAbandoned
// helpers are abandoned; past that, a leaving waiter's helper keeps its
// place, and later waits poll instead (Context waits wait for a place).
// At most MaxHelpers+MaxAbandoned helper threads block at once.
const MaxAbandoned = 32

// helperIdle is how long an idle helper thread lives before it exits.
const helperIdle = 2 * time.Second

// errNoHelper is a helper's answer when it could not serve the wait
// (its thread could not enter relaxed capture mode): the waiter polls.
var errNoHelper = errors.New("sync: no helper thread")

type jobState uint8

const (
	jobRunning   jobState = iota // counted in pool.active
	jobAbandoned                 // its waiter left; counted in pool.abandoned
	jobDone
)

type job struct {
	t     target
	ctx   context.Context
	res   chan error // buffered: a helper never blocks on its answer
	state jobState   // pool.mu
}

// pool runs blocking waits on helper goroutines, each locked to its own
// OS thread in relaxed capture mode. A helper that finishes a job waits
// helperIdle for the next, then exits, taking its thread with it (it
// never unlocks).
type pool struct {
	mu        gosync.Mutex
	active    int           // jobs whose waiter waits for them
	abandoned int           // jobs whose waiter left
	threads   int           // helper goroutines alive
	blocking  int           // helpers inside a driver call for a job
	freed     chan struct{} // closed and replaced when a place frees up
	jobs      chan *job     // idle helpers take jobs here
}

var helpers = &pool{freed: make(chan struct{}), jobs: make(chan *job)}

// submit starts j on a helper if fewer than MaxHelpers jobs are active.
func (p *pool) submit(j *job) bool {
	ok, _ := p.trySubmit(j)
	return ok
}

// trySubmit is submit that also returns the channel closed when a place
// frees up, for a caller that got none.
func (p *pool) trySubmit(j *job) (bool, <-chan struct{}) {
	p.mu.Lock()
	if p.active >= MaxHelpers {
		freed := p.freed
		p.mu.Unlock()
		return false, freed
	}
	p.active++
	j.state = jobRunning
	p.mu.Unlock()
	p.start(j)
	return true, nil
}

// takePlace takes one of the MaxHelpers places if one is free, for a
// wait that blocks outside the helpers (blockOnCaller); givePlace gives
// it back.
func (p *pool) takePlace() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active >= MaxHelpers {
		return false
	}
	p.active++
	return true
}

func (p *pool) givePlace() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active--
	p.freeLocked()
}

// start hands j to an idle helper, or to a new one.
func (p *pool) start(j *job) {
	select {
	case p.jobs <- j: // an idle helper took it
	default:
		p.mu.Lock()
		p.threads++
		p.mu.Unlock()
		go p.helper(j)
	}
}

// submitWait starts j on a helper as soon as a place is free, or returns
// ctx's error.
func (p *pool) submitWait(ctx context.Context, j *job) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ok, freed := p.trySubmit(j)
		if ok {
			return nil
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// freeLocked wakes the waiters for a place; p.mu is held.
func (p *pool) freeLocked() {
	close(p.freed)
	p.freed = make(chan struct{})
}

// abandon is called by j's waiter when it leaves before the answer: j's
// place goes to later waits, unless MaxAbandoned helpers are abandoned
// already.
func (p *pool) abandon(j *job) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if j.state != jobRunning || p.abandoned >= MaxAbandoned {
		return
	}
	j.state = jobAbandoned
	p.active--
	p.abandoned++
	p.freeLocked()
}

// finish ends j's count.
func (p *pool) finish(j *job) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if j.state == jobAbandoned {
		p.abandoned--
	} else {
		p.active--
		p.freeLocked()
	}
	j.state = jobDone
}

// blockOnCaller blocks in the driver for t (as a helper would: t.block)
// on the calling goroutine's own thread, for an Auto wait that nothing can
// cancel (its context.Context has no Done channel, as Background's). The
// thread is woken by the driver when t finishes and the wait returns from
// there, where a helper's answer would have to wake the waiting goroutine
// in turn, a second OS thread wake-up. The thread is locked and in relaxed
// capture mode for the call, and its current context and capture mode are
// restored after. It takes one of the MaxHelpers places (and counts as a
// blocking helper in ReadStats, and in CallerBlocks); ok is false, with
// nothing done, when none is free or the thread's capture mode cannot be
// set.
func blockOnCaller(t target) (ok bool, err error) {
	p := helpers
	if !p.takePlace() {
		return false, nil
	}
	defer p.givePlace()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	mode := libcuda.CU_STREAM_CAPTURE_MODE_RELAXED
	if libcuda.ThreadExchangeStreamCaptureMode(&mode) != nil {
		return false, nil
	}
	var prev libcuda.Context
	if err := libcuda.CtxGetCurrent(&prev); err != nil {
		err = dl.Failed("", "cuCtxGetCurrent", err)
		if merr := libcuda.ThreadExchangeStreamCaptureMode(&mode); merr != nil {
			err = errors.Join(err, dl.Failed("", "cuThreadExchangeStreamCaptureMode", merr))
		}
		return true, err
	}
	p.mu.Lock()
	p.blocking++
	p.mu.Unlock()
	err = t.block()
	p.mu.Lock()
	p.blocking--
	p.mu.Unlock()
	if cerr := libcuda.CtxSetCurrent(prev); cerr != nil {
		err = errors.Join(err, dl.Failed("", "cuCtxSetCurrent", cerr))
	}
	if merr := libcuda.ThreadExchangeStreamCaptureMode(&mode); merr != nil {
		err = errors.Join(err, dl.Failed("", "cuThreadExchangeStreamCaptureMode", merr))
	}
	callerBlocks.Add(1)
	return true, err
}

// callerBlocks counts the waits that blocked on their own thread
// (blockOnCaller) since the program started.
var callerBlocks atomic.Int64

func (p *pool) helper(j *job) {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	defer func() {
		p.mu.Lock()
		p.threads--
		p.mu.Unlock()
	}()
	mode := libcuda.CU_STREAM_CAPTURE_MODE_RELAXED
	if err := libcuda.ThreadExchangeStreamCaptureMode(&mode); err != nil {
		// The thread's mode is unknown: it ends with this goroutine, and
		// the waiter polls instead (a context wait needs no mode).
		slog.Error("sync: a helper thread could not enter relaxed capture mode; it ends",
			"err", dl.Failed("", "cuThreadExchangeStreamCaptureMode", err))
		if _, ok := j.t.(contextTarget); ok {
			p.run(j)
		} else {
			j.res <- errNoHelper
		}
		p.finish(j)
		return
	}
	idle := time.NewTimer(helperIdle)
	defer idle.Stop()
	for {
		p.run(j)
		p.finish(j)
		idle.Reset(helperIdle)
		select {
		case j = <-p.jobs:
		case <-idle.C:
			return
		}
	}
}

// run answers j, without blocking in the driver when its waiter has left
// already.
func (p *pool) run(j *job) {
	p.mu.Lock()
	if err := j.ctx.Err(); err != nil {
		p.mu.Unlock()
		j.res <- err
		return
	}
	p.blocking++
	p.mu.Unlock()
	err := j.t.block()
	p.mu.Lock()
	p.blocking--
	p.mu.Unlock()
	j.res <- err
}
