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
// is kept. An update that succeeds but cannot track its launches, so that
// what the graphs lease is kept for good, is logged, and the graph is
// launched.
func (c *Cached) Run(s libcuda.Stream, f func(s libcuda.Stream) error) (err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("graph: Cached.Run: %w", ErrDestroyed)
	}
	g, err := Capture(s, c.mode, f)
	if err != nil {
		return err
	}
	defer func() {
		if derr := g.Destroy(); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	if c.exec != nil {
		inPlace, err := c.exec.Update(g)
		switch {
		case err != nil && inPlace:
			// Updated, but its launches cannot be tracked: what its
			// graphs lease is kept for good. The work itself is sound,
			// so it runs; the loss is logged, as a failed release is.
			slog.Error("graph: Cached.Run", "err", err)
		case err != nil:
			return err
		}
		if inPlace {
			c.stats.Updates++
		} else {
			old := c.exec
			c.exec = nil
			if err := old.Destroy(); err != nil {
				return err
			}
		}
	}
	if c.exec == nil {
		if c.exec, err = g.Instantiate(); err != nil {
			return err
		}
		c.stats.Instantiations++
	}
	if err := c.exec.Launch(s); err != nil {
		return err
	}
	c.stats.Runs++
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
