package graph

import (
	"context"
	"fmt"
	gosync "sync"

	"github.com/purecuda/purecuda/sync"
)

// InProgress returns the number of captures in progress that package
// sync's registry knows of: every capture made through this package, on
// any goroutine, from the moment it is admitted until it has ended, and
// those announced with sync.StartCapture.
//
// Deprecated: use sync.CapturesInProgress.
func InProgress() int { return sync.CapturesInProgress() }

// Postpone queues f to run once no capture is in progress, as
// sync.Postpone does; Drain waits for it.
//
// Deprecated: use sync.Postpone.
func Postpone(f func()) { sync.Postpone(f) }

// Background work: waits for the last launch of destroyed executable
// graphs, lease releases. Postponed functions are counted by package
// sync (sync.WaitPostponed).
var bg struct {
	mu   gosync.Mutex
	n    int
	idle chan struct{} // closed when n drops to zero; nil until a Drain asks
}

func bgAdd() {
	bg.mu.Lock()
	bg.n++
	bg.mu.Unlock()
}

func bgDone() {
	bg.mu.Lock()
	bg.n--
	if bg.n == 0 && bg.idle != nil {
		close(bg.idle)
		bg.idle = nil
	}
	bg.mu.Unlock()
}

// goBackground runs f on a new goroutine of this package, counted for Drain.
func goBackground(f func()) {
	bgAdd()
	go func() {
		defer bgDone()
		f()
	}()
}

// Drain waits until the background work of this package has finished:
// postponed functions (sync.Postpone's, which wait for the captures in
// progress to end), the waits for the last launches of destroyed
// executable graphs, and the lease releases they lead to, including work
// that this work queues in turn. It returns ctx's error, wrapped, if ctx
// ends first.
//
// Leases of graphs and executable graphs that still exist are not waited
// for: they are released only after those are destroyed.
func Drain(ctx context.Context) error {
	for {
		if err := waitBackground(ctx); err != nil {
			return err
		}
		if err := sync.WaitPostponed(ctx); err != nil {
			return fmt.Errorf("graph: Drain: %w", err)
		}
		// A postponed function may have started background work.
		bg.mu.Lock()
		n := bg.n
		bg.mu.Unlock()
		if n == 0 {
			return nil
		}
	}
}

// waitBackground waits until no background work of this package runs.
func waitBackground(ctx context.Context) error {
	for {
		bg.mu.Lock()
		n := bg.n
		if n == 0 {
			bg.mu.Unlock()
			return nil
		}
		if bg.idle == nil {
			bg.idle = make(chan struct{})
		}
		idle := bg.idle
		bg.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("graph: Drain: %d background tasks left, %d captures in progress: %w", n, sync.CapturesInProgress(), ctx.Err())
		}
	}
}
