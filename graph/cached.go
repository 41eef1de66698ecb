package graph

import (
	"errors"
	"fmt"
	"log/slog"
	gosync "sync"

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
func (c *Cached) Run(s libcuda.Stream, f func(s libcuda.Stream) error) (err error) {
	var done *leases
	defer func() { done.unrefHere() }() // after c.mu is unlocked: a release may call back
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("graph: Cached.Run: %w", ErrDestroyed)
	}
	if err := checkCapture(s, f); err != nil {
		return err
	}
	// The captured graph is the driver's, destroyed before Run returns
	// unless it is instantiated: a Graph is made only for that.
	raw, cu, l, err := captureRaw(s, c.mode, f, &c.rec)
	if err != nil {
		return err
	}
	// A graph that cannot be destroyed (what it leases is then kept) is
	// no failed update: the work runs, and Run returns the error.
	var derr error
	if c.exec != nil {
		var inPlace bool
		inPlace, done, err = c.exec.updateRaw(raw, l)
		switch {
		case err != nil && inPlace:
			// Updated, but its launches cannot be tracked: what its
			// graphs lease is kept for good. The work itself is sound,
			// so it runs; the loss is logged, as a failed release is.
			slog.Error("graph: Cached.Run", "err", err)
		case err != nil:
			return errors.Join(err, dropRaw(raw, l))
		}
		if inPlace {
			c.stats.Updates++
			derr = dropRaw(raw, l)
		} else {
			old := c.exec
			c.exec = nil
			if err := old.Destroy(); err != nil {
				return errors.Join(err, dropRaw(raw, l))
			}
		}
	}
	if c.exec == nil {
		g := newGraph(raw, cu, l)
		c.exec, err = g.Instantiate()
		derr = g.Destroy()
		if err != nil {
			return errors.Join(err, derr)
		}
		c.stats.Instantiations++
	}
	if err := c.exec.Launch(s); err != nil {
		return errors.Join(err, derr)
	}
	c.stats.Runs++
	return derr
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
