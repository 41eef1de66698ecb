package graph

import (
	"context"
	"fmt"
	gosync "sync"
	"sync/atomic"

	"github.com/purecuda/purecuda/libcuda"
)

// The registry of captures in progress and the queue of postponed work.
// active counts captures from the moment Capture is called until the
// capture has ended; a postponed function runs only while active is zero,
// and a capture that starts while one runs waits for it before beginning.
var reg = struct {
	mu       gosync.Mutex
	cond     gosync.Cond
	active   int                 // captures in progress; mirrored in activeCount
	running  bool                // a postponed function is running
	runner   bool                // the goroutine that runs the queue is started
	queue    []func()            // postponed functions, in order
	captures map[uint64]*capture // begun captures by the driver's capture id
}{captures: map[uint64]*capture{}}

func init() { reg.cond.L = &reg.mu }

var activeCount atomic.Int64

// capture is one capture in progress.
type capture struct {
	id     uint64
	stream libcuda.Stream // the stream the capture began on
	leases *leases
}

// InProgress returns the number of captures made through this package,
// on any goroutine, that have begun and not ended. A capture counts from
// the moment Capture is called until it has ended.
func InProgress() int { return int(activeCount.Load()) }

// enter counts a capture that is about to begin and waits until no
// postponed function is running.
func enter() {
	reg.mu.Lock()
	reg.active++
	activeCount.Store(int64(reg.active))
	for reg.running {
		reg.cond.Wait()
	}
	reg.mu.Unlock()
}

// register makes c findable by Lease.
func register(c *capture) {
	reg.mu.Lock()
	reg.captures[c.id] = c
	reg.mu.Unlock()
}

// exit ends the count of a capture (registered or not) and starts the
// postponed work when it was the last one.
func exit(c *capture) {
	reg.mu.Lock()
	if c != nil && reg.captures[c.id] == c {
		delete(reg.captures, c.id)
	}
	reg.active--
	activeCount.Store(int64(reg.active))
	startRunnerLocked()
	reg.mu.Unlock()
}

// Postpone queues f to run once no capture made through this package is
// in progress. Queued functions run in order, one at a time, on a
// goroutine of this package (never on a capturing goroutine's locked
// thread); when nothing is capturing, f runs at once, still on that
// goroutine and after the functions queued before it. While a postponed
// function runs, captures made through this package wait before they begin,
// so f may make calls that would invalidate a capture, cuCtxSynchronize
// included.
//
// Captures begun directly through the driver are not seen: f can run, and
// invalidate them, while they are in progress.
//
// f must not begin a capture through this package, nor call Drain, nor
// wait for a goroutine that does: each would wait for f to return.
func Postpone(f func()) {
	if f == nil {
		return
	}
	bgAdd()
	reg.mu.Lock()
	reg.queue = append(reg.queue, f)
	startRunnerLocked()
	reg.mu.Unlock()
}

func startRunnerLocked() {
	if reg.active == 0 && !reg.runner && len(reg.queue) > 0 {
		reg.runner = true
		go runPostponed()
	}
}

// runPostponed runs the queue until it is empty or a capture starts.
func runPostponed() {
	reg.mu.Lock()
	for reg.active == 0 && len(reg.queue) > 0 {
		f := reg.queue[0]
		reg.queue[0] = nil
		reg.queue = reg.queue[1:]
		if len(reg.queue) == 0 {
			reg.queue = nil
		}
		reg.running = true
		reg.mu.Unlock()
		runOne(f)
		reg.mu.Lock()
	}
	reg.runner = false
	reg.mu.Unlock()
}

// runOne runs one postponed function and marks it done, also when it
// panics (the panic goes on and ends the program, as any goroutine's does).
func runOne(f func()) {
	defer func() {
		reg.mu.Lock()
		reg.running = false
		reg.cond.Broadcast()
		reg.mu.Unlock()
		bgDone()
	}()
	f()
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
