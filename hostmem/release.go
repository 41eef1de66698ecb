package hostmem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	gosync "sync"
	"time"

	"github.com/purecuda/purecuda/libcuda"
)

// free marks the buffer of generation gen freed and hands its release to
// the owner, once.
func (st *state) free(gen uint64) {
	st.mu.Lock()
	if st.gen != gen || st.freed {
		st.mu.Unlock()
		return
	}
	st.freed = true
	move(&st.phase, phaseFreed)
	if st.holds > 0 {
		// A submission holds the buffer: its Use is still to come, and
		// the last Unhold hands the release over (hold.go). Counted as
		// pending from now on, so that a Wait or Drain waits for it.
		st.mu.Unlock()
		countPending()
		return
	}
	st.readyLocked()
	st.mu.Unlock()
	handOver(st, false)
}

// readyLocked prepares the release of a freed buffer, whose holds have
// ended, for the owner; st.mu is held.
func (st *state) readyLocked() {
	if len(st.uses) == 0 && !st.leased {
		// Never used on a stream: work hostmem does not know of may use it.
		st.unknown = true
	}
}

// fail ends a release that could not be completed, logged once: the
// memory stays registered, referenced and pinned for good, and so do the
// events and context holds of uses not yet recycled. The state is never
// reused.
func (o *owner) fail(st *state, err error) {
	// Logged before the release ends: a Wait that returns after it finds
	// the failure logged.
	logFailure(st.ctx, err, "hostmem: release failed; the memory stays pinned for good",
		"addr", fmt.Sprintf("%#x", uintptr(st.p)), "size", st.size)
	o.keep(st)
}

// lostLogged holds the contexts whose loss was logged.
var lostLogged gosync.Map // libcuda.Context -> struct{}

// logFailure logs a failure that keeps memory pinned for good, with args
// and err. In a lost context (err matches libcuda.ErrContextLost: a kernel
// fault), where every release and unregister fails alike, only the first
// failure of that context is logged, saying so. (A context created, lost
// and destroyed gives its handle to a later context, whose loss is then not
// logged again: a lost primary context cannot be made again.)
func logFailure(ctx libcuda.Context, err error, msg string, args ...any) {
	if errors.Is(err, libcuda.ErrContextLost) {
		if _, dup := lostLogged.LoadOrStore(ctx, struct{}{}); dup {
			return
		}
		msg = "hostmem: the context is lost (a kernel fault, see libcuda.ErrContextLost): the memory of its releases and registrations stays pinned for good (logged once for the context)"
		args = append(args, "context", fmt.Sprintf("%#x", uintptr(ctx)))
	}
	slog.Error(msg, append(args, "err", err)...)
}

// keep ends a failed release without logging it: the caller logs the
// failure once.
func (o *owner) keep(st *state) {
	move(&st.phase, phaseFailed)
	reg.keep(st.regs)
	reg.mu.Lock()
	reg.stats.failures++
	reg.mu.Unlock()
	finished(1)
}

// Trim unregisters every retired registration now and returns how many it
// ended. An unregister waits for all work in flight on the device and holds
// other threads' launches meanwhile: call it when the device is idle or a
// stall does not matter.
//
// The unregisters run on the calling goroutine, unless a batch runs
// already: then Trim waits for the next one.
func Trim() int {
	token.Lock()
	b := &own.batch
	if b.running {
		token.Unlock()
		return <-requestBatch()
	}
	batch := reg.collect()
	b.running = len(batch) > 0
	token.Unlock()
	if len(batch) == 0 {
		return 0
	}
	unregister(batch)
	token.Lock()
	own.batchDone(len(batch))
	token.Unlock()
	poke() // the owner may want another batch, or to stop
	return len(batch)
}

// Wait waits until every release in progress has finished: their memory
// is retired, but stays registered and pinned until a batch, Trim or
// Drain unregisters it, and hostmem keeps its pooled events. Postponed
// releases wait for the captures that hold them. It returns ctx's error
// when ctx ends first, at once, whatever is in flight.
//
// For up to 2ms after the last progress, Wait runs the owner's rounds
// itself every 10µs, yielding between (when the owner is not in one);
// then it sleeps until a release finishes, with the owner polling every
// 10µs meanwhile while it makes progress.
func Wait(ctx context.Context) error {
	hurried := false
	defer func() {
		if hurried {
			inbox.mu.Lock()
			inbox.hurry--
			inbox.mu.Unlock()
		}
		poke() // the owner takes over what the rounds here left
	}()
	spinUntil := time.Now().Add(hurryFor)
	var last time.Time
	for {
		inbox.mu.Lock()
		pending, changed := inbox.pending, inbox.changed
		inbox.watched = true
		inbox.mu.Unlock()
		if pending == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if now := time.Now(); now.Before(spinUntil) {
			if now.Sub(last) < hurryTick {
				runtime.Gosched()
				continue
			}
			last = now
			if help() {
				spinUntil = time.Now().Add(hurryFor)
			}
			continue
		}
		if !hurried {
			hurried = true
			inbox.mu.Lock()
			inbox.hurry++
			inbox.mu.Unlock()
			poke()
			continue // a release may have finished meanwhile
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Drain waits until every release in progress has finished, then
// unregisters what is retired and destroys the events kept for reuse, so
// that hostmem holds no primary context it does not need. Memory of
// buffers not freed, and memory leased to graphs that still exist, stays
// registered. It returns ctx's error when ctx ends first, at once, also
// while an unregister is in progress (that goes on in the background).
func Drain(ctx context.Context) error {
	if err := Wait(ctx); err != nil {
		return err
	}
	flushEvents()
	select {
	case <-requestBatch():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats are counts of the package's registrations and releases.
type Stats struct {
	Registrations int   // registered ranges in use or retired
	Bytes         int64 // their bytes
	Kept          int   // ranges kept registered and pinned for good after a failure
	Retired       int   // unused registrations waiting for a batch unregister
	RetiredBytes  int64
	Pending       int   // releases in progress, postponed ones included
	Postponed     int   // releases waiting for captures to end
	Failures      int   // releases or unregisters that failed
	Registers     int64 // cuMemHostRegister calls made
	Unregisters   int64 // cuMemHostUnregister and cuMemFreeHost calls made
	HeldContexts  int   // primary contexts hostmem holds (see Contexts in the package doc)
	// Dropped counts the registrations let go, since the program started,
	// because their context had been destroyed (the driver drops them with
	// it).
	Dropped int64
	// EventQueries counts the cuEventQuery calls made to learn whether
	// released buffers' uses are done (the owner's rounds and Wait's),
	// and OwnerWakeups the times the owner goroutine was started or woken,
	// since the program started: each query holds other threads' launches
	// for a moment, so a steady loop of releases should make at most about
	// a thousand of each a second, however fast it goes.
	EventQueries int64
	OwnerWakeups int64
}

// ReadStats returns the current counts.
func ReadStats() Stats {
	var s Stats
	reg.mu.Lock()
	reg.regs.each(func(r *registration) {
		switch {
		case r.kind == foreign || r.kind == pageable:
		case r.failed || r.kept > 0:
			s.Kept++
		default:
			s.Registrations++
			s.Bytes += r.size()
			if r.refs == 0 && r.retires() {
				s.Retired++
			}
		}
	})
	s.Dropped = reg.stats.dropped
	s.RetiredBytes = reg.retired
	s.Failures = reg.stats.failures
	s.Registers = reg.stats.registers
	s.Unregisters = reg.stats.unregisters
	reg.mu.Unlock()
	inbox.mu.Lock()
	s.Pending, s.Postponed = inbox.pending, inbox.postponed
	inbox.mu.Unlock()
	holds.mu.Lock()
	s.HeldContexts = len(holds.n)
	holds.mu.Unlock()
	s.EventQueries = activity.queries.Load()
	s.OwnerWakeups = activity.wakeups.Load()
	return s
}
