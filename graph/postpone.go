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
func InProgress() int { return sync.CapturesInProgress() }

// Postpone queues f to run once no capture is in progress (see
// sync.Postpone, which runs it). Queued functions run in order, one at a
// time, on a goroutine of package sync (never on a capturing goroutine's
// locked thread); when nothing is capturing, f runs at once, still on that
// goroutine and after the functions queued before it. While a postponed
// function runs, captures made through this package wait before they
// begin, so f may make calls that would invalidate a capture,
// cuCtxSynchronize included. Drain waits for postponed functions.
//
// Captures begun directly through the driver, without sync.StartCapture,
// are not seen: f can run, and invalidate them, while they are in
// progress.
//
// f must not begin a capture through this package, nor call Drain, nor
// wait for a goroutine that does: each would wait for f to return.
func Postpone(f func()) {
	if f == nil {
		return
	}
	bgAdd()
	sync.Postpone(func() {
		defer bgDone()
		f()
	})
}

// Background work: postponed functions, waits for the last launch of
// destroyed executable graphs, lease releases.
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
// postponed functions (which wait for the captures in progress to end),
// the waits for the last launches of destroyed executable graphs, and the
// lease releases they lead to, including work that this work queues in
// turn. It returns ctx's error, wrapped, if ctx ends first.
//
// Leases of graphs and executable graphs that still exist are not waited
// for: they are released only after those are destroyed.
func Drain(ctx context.Context) error {
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
			return fmt.Errorf("graph: Drain: %d background tasks left, %d captures in progress: %w", n, InProgress(), ctx.Err())
		}
	}
}
