package graph

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	gosync "sync"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
)

// Cached is a captured piece of work that is run many times, as CUDA.jl's
// @captured does: the first Run captures it, instantiates the graph and
// launches it; later runs capture it again and update the executable graph
// in place when the topology allows (only parameters changed), else
// instantiate the new graph. Capturing again each time keeps the launch
// right when parameters such as pointers or sizes change between runs.
//
// Close it when done. Runs are serialized.
type Cached struct {
	mu     gosync.Mutex
	mode   libcuda.StreamCaptureMode
	exec   *Exec
	stats  CacheStats
	rec    capture // the record of each of its captures
	closed bool
}

// CacheStats counts what a Cached has done.
type CacheStats struct {
	Runs           int // Run calls that launched
	Updates        int // runs that updated the executable graph in place
	Instantiations int // runs that instantiated a graph (the first, and those whose topology changed)
}

// NewCached returns a Cached that captures in the given mode (DefaultMode
// unless there is a reason for another).
func NewCached(mode libcuda.StreamCaptureMode) *Cached { return &Cached{mode: mode} }

// Run captures f's work on s (see Capture), brings the executable graph up
// to date with it and launches it on s. When the capture or the update
// fails, nothing is launched and the executable graph of the previous run
// is kept. A graph whose topology changed replaces that one, which is
// destroyed first: when the new one cannot be instantiated there is none,
// and the next Run instantiates. An update that succeeds but cannot track
// its launches, so that what the graphs lease is kept for good, is logged,
// and the graph is launched.
//
// What the previous run's capture leased (Lease) is released before Run
// returns, on the calling goroutine and with c unlocked, when that run's
// launch has finished by the time of the update; else in the background
// once it has (see Exec.Update).
//
// Run asks the driver for s's context and for the thread's each time
// (cuStreamGetCtx, cuCtxGetCurrent), and makes s's context current for
// the run if it is not; the capture, the update and the launch run in one
// stretch on the calling goroutine's thread, locked. RunCurrent is Run for
// a caller that knows both.
func (c *Cached) Run(s libcuda.Stream, f func(s libcuda.Stream) error) error {
	if err := checkCapture(s, f); err != nil {
		return err
	}
	var cu libcuda.Context
	if err := libcuda.StreamGetCtx(s, &cu); err != nil {
		return fmt.Errorf("graph: capture of %s: the stream's context: %w", streamName(s), dl.Failed("", "cuStreamGetCtx", err))
	}
	var done *leases
	var err error
	ran := false
	werr := libcuda.WithContext(cu, func() error {
		ran = true
		done, err = c.run(cu, s, f, false)
		return nil
	})
	done.unrefHere() // c is unlocked: a release may call back
	if werr != nil { // making the context current, or restoring it, failed
		err = errors.Join(err, fmt.Errorf("graph: Cached.Run on %s: the thread's context (run made: %v): %w", streamName(s), ran, werr))
	}
	return err
}

// RunCurrent is Run for a caller whose goroutine is locked to its OS thread
// (runtime.LockOSThread) with cu, the context of s, current on it, as a C
// program's loop has its context current: it asks the driver for neither
// context, so that a run makes the driver calls of C's capture, update and
// launch and no other. f runs on the calling thread with cu current.
//
// The run that instantiates (the first, and one whose topology changed)
// checks that cu is s's context and current, and fails before the capture
// when it is not; later runs take the caller's word: one made while
// another context is current makes f's calls that depend on the current
// context in that one.
func (c *Cached) RunCurrent(cu libcuda.Context, s libcuda.Stream, f func(s libcuda.Stream) error) error {
	if err := checkCapture(s, f); err != nil {
		return err
	}
	runtime.LockOSThread() // the capture's thread, whatever the caller did
	defer runtime.UnlockOSThread()
	done, err := c.run(cu, s, f, true)
	done.unrefHere() // c is unlocked: a release may call back
	return err
}

// run is Run with s's context cu current on the calling goroutine's
// locked thread; check says to check that before an instantiation. It
// returns the reference on the leases that the update released, for the
// caller to drop once c is unlocked.
func (c *Cached) run(cu libcuda.Context, s libcuda.Stream, f func(s libcuda.Stream) error, check bool) (done *leases, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("graph: Cached.Run: %w", ErrDestroyed)
	}
	if check && c.exec == nil {
		if err := checkCurrent(cu, s); err != nil {
			return nil, err
		}
	}
	// The captured graph is the driver's, destroyed before Run returns
	// unless it is instantiated: a Graph is made only for that.
	raw, l, err := runCapture(s, c.mode, f, &c.rec)
	if err != nil {
		return nil, err
	}
	// A graph that cannot be destroyed (what it leases is then kept) is
	// no failed update: the work runs, and Run returns the error.
	var derr error
	if c.exec != nil {
		var inPlace bool
		inPlace, done, err = c.exec.updateRaw(raw, l, cu)
		switch {
		case err != nil && inPlace:
			// Updated, but its launches cannot be tracked: what its
			// graphs lease is kept for good. The work itself is sound,
			// so it runs; the loss is logged, as a failed release is.
			slog.Error("graph: Cached.Run", "err", err)
		case err != nil:
			return done, errors.Join(err, dropRaw(raw, l))
		}
		if inPlace {
			c.stats.Updates++
			derr = dropRaw(raw, l)
		} else {
			old := c.exec
			c.exec = nil
			if err := old.Destroy(); err != nil {
				return done, errors.Join(err, dropRaw(raw, l))
			}
		}
	}
	if c.exec == nil {
		g := newGraph(raw, cu, l)
		c.exec, err = g.Instantiate()
		derr = g.Destroy()
		if err != nil {
			return done, errors.Join(err, derr)
		}
		c.stats.Instantiations++
	}
	if err := c.exec.Launch(s); err != nil {
		return done, errors.Join(err, derr)
	}
	c.stats.Runs++
	return done, derr
}

// checkCurrent fails unless cu is s's context and current on the calling
// thread (RunCurrent's word, checked when it instantiates).
func checkCurrent(cu libcuda.Context, s libcuda.Stream) error {
	var sc, cur libcuda.Context
	if err := libcuda.StreamGetCtx(s, &sc); err != nil {
		return fmt.Errorf("graph: Cached.RunCurrent on %s: the stream's context: %w", streamName(s), dl.Failed("", "cuStreamGetCtx", err))
	}
	if err := libcuda.CtxGetCurrent(&cur); err != nil {
		return fmt.Errorf("graph: Cached.RunCurrent on %s: the thread's context: %w", streamName(s), dl.Failed("", "cuCtxGetCurrent", err))
	}
	switch {
	case sc != cu:
		return fmt.Errorf("graph: Cached.RunCurrent on %s: the context given is not the stream's", streamName(s))
	case cur != cu:
		return fmt.Errorf("graph: Cached.RunCurrent on %s: the context given is not current on the calling thread (lock the goroutine to its thread and make it current first)", streamName(s))
	}
	return nil
}

// dropRaw destroys the driver's graph raw that a capture made and drops
// the capture's reference on its leases l; when the graph cannot be
// destroyed, what it leases is kept.
func dropRaw(raw libcuda.Graph, l *leases) error {
	if err := destroyGraph(raw); err != nil {
		return fmt.Errorf("graph: Destroy: %w", err)
	}
	l.unref()
	return nil
}

// Stats returns what c has done so far.
func (c *Cached) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Close destroys the executable graph; its leases are released once its
// last launch has finished. Close does not wait for that.
func (c *Cached) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("graph: Cached.Close: %w", ErrDestroyed)
	}
	c.closed = true
	if c.exec == nil {
		return nil
	}
	err := c.exec.Destroy()
	c.exec = nil
	return err
}
