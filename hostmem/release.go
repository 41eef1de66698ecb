package hostmem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	gosync "sync"
	"time"

	"github.com/purecuda/purecuda/sync"
)

// releases counts the releases that have not finished, and lets Drain wait.
var releases struct {
	mu        gosync.Mutex
	pending   int           // started, not finished (postponed ones included)
	postponed int           // waiting for captures to end
	changed   chan struct{} // closed and replaced when pending drops and watched
	watched   bool          // a Drain waits on changed
}

func init() { releases.changed = make(chan struct{}) }

func adjust(pending, postponed int) {
	releases.mu.Lock()
	releases.pending += pending
	releases.postponed += postponed
	if pending < 0 && releases.watched {
		close(releases.changed)
		releases.changed = make(chan struct{})
		releases.watched = false
	}
	releases.mu.Unlock()
}

// free marks the buffer of generation gen freed and starts its release,
// once: the reaper waits for its uses, then afterUses retires it.
func (st *state) free(gen uint64) {
	st.mu.Lock()
	if st.gen != gen || st.freed {
		st.mu.Unlock()
		return
	}
	st.freed = true
	uses := st.uses
	st.uses = nil
	if len(uses) == 0 && !st.leased {
		// Never used on a stream: work hostmem does not know of may use it.
		st.unknown = true
	}
	st.mu.Unlock()
	adjust(1, 0)
	if len(uses) == 0 {
		go st.afterUses()
		return
	}
	reap(st, uses)
}

// afterUses finishes a release once the events of its uses have
// completed: it retires the registrations, or waits for the whole context
// when some use could not be tracked by an event.
func (st *state) afterUses() {
	if st.unknown {
		go st.waitContext()
		return
	}
	st.retire()
}

// waitContext waits for all work of the buffer's context, postponing the
// wait through package graph while captures are in progress.
func (st *state) waitContext() {
	err := sync.Context(context.Background(), st.ctx)
	if errors.Is(err, sync.ErrCapturing) {
		adjust(0, 1)
		again := func() {
			adjust(0, -1)
			st.waitContext()
		}
		sync.Postpone(func() { go again() })
		return
	}
	if err != nil {
		st.fail(fmt.Errorf("waiting for the context: %w", err))
		return
	}
	st.retire()
	// The context was idle just now: a good moment for a batch.
	go reg.trim()
}

func (st *state) retire() {
	reg.release(st.regs)
	st.hold.release()
	adjust(-1, 0)
	st.reuse()
}

// fail logs a release that could not be completed; the memory stays
// registered, referenced and pinned for good, and so do the events and
// context holds of uses not yet recycled.
func (st *state) fail(err error) {
	reg.keep(st.regs)
	reg.mu.Lock()
	reg.stats.failures++
	reg.mu.Unlock()
	slog.Error("hostmem: release failed; the memory stays pinned for good",
		"addr", fmt.Sprintf("%#x", uintptr(st.p)), "size", st.size, "err", err)
	adjust(-1, 0)
}

// Trim unregisters every retired registration now and returns how many it
// ended. An unregister waits for all work in flight on the device and holds
// other threads' launches meanwhile: call it when the device is idle or a
// stall does not matter.
func Trim() int { return reg.trim() }

// Wait waits until every release in progress has finished: their memory
// is retired, but stays registered and pinned until a batch, Trim or
// Drain unregisters it, and hostmem keeps its pooled events. Postponed
// releases wait for the captures that hold them.
//
// For up to 2ms after the last progress, Wait runs the reaper's rounds
// itself every 10µs, yielding between; then it sleeps until a release
// finishes, with the reaper hurried meanwhile.
func Wait(ctx context.Context) error {
	hurried := false
	defer func() {
		if hurried {
			unhurryReaper()
		}
	}()
	var probes []probe
	spinUntil := time.Now().Add(hurryFor)
	var last time.Time
	for {
		releases.mu.Lock()
		pending, changed := releases.pending, releases.changed
		releases.watched = true
		releases.mu.Unlock()
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
			var progress bool
			if probes, progress, _, _ = reapRound(probes, false); progress {
				spinUntil = time.Now().Add(hurryFor)
			}
			continue
		}
		if !hurried {
			hurried = true
			hurryReaper()
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
// registered.
func Drain(ctx context.Context) error {
	if err := Wait(ctx); err != nil {
		return err
	}
	flushEvents()
	// Unregister what is retired, and wait for batches already running.
	for {
		reg.trim()
		reg.mu.Lock()
		var ending chan struct{}
		for _, r := range reg.regs {
			if r.ending != nil {
				ending = r.ending
				break
			}
		}
		reg.mu.Unlock()
		if ending == nil {
			return nil
		}
		select {
		case <-ending:
		case <-ctx.Done():
			return ctx.Err()
		}
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
}

// ReadStats returns the current counts.
func ReadStats() Stats {
	var s Stats
	reg.mu.Lock()
	for _, r := range reg.regs {
		if r.kind == foreign || r.kind == pageable {
			continue
		}
		if r.failed || r.kept > 0 {
			s.Kept++
			continue
		}
		s.Registrations++
		s.Bytes += r.size()
		if r.refs == 0 && r.retires() {
			s.Retired++
		}
	}
	s.RetiredBytes = reg.retired
	s.Failures = reg.stats.failures
	s.Registers = reg.stats.registers
	s.Unregisters = reg.stats.unregisters
	reg.mu.Unlock()
	releases.mu.Lock()
	s.Pending, s.Postponed = releases.pending, releases.postponed
	releases.mu.Unlock()
	holds.mu.Lock()
	s.HeldContexts = len(holds.n)
	holds.mu.Unlock()
	return s
}
