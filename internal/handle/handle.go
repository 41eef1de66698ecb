// Package handle is the lifetime that packages cublas, cublaslt, curand
// and cufft give their library's handles: made on a cuda.Stream in its
// context, used by calls that hold it for reading, changed and closed
// under its lock, and
// destroyed, once closed or collected, through sync.Postpone (the
// libraries' destroys synchronize the device, which would invalidate a
// capture in progress), with the stream's context held until then.
package handle

import (
	"errors"
	"fmt"
	"log/slog"
	gosync "sync"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Life is one handle's lifetime. Its zero value is not usable: see Open.
type Life struct {
	mu      gosync.RWMutex // held for reading by calls, for writing by changes and Close
	closed  bool
	s       *cuda.Stream // guarded by mu
	hold    *cuda.ContextHold
	pkg     string       // "cublas", for errors and logs
	destroy func() error // run with the context current
}

// Open holds the stream's context and runs create with it current on a
// locked thread (cuda's Stream.Do, as call); destroy is what Close will
// run, in the same context, to destroy what create made.
func Open(s *cuda.Stream, pkg, call string, create func(raw libcuda.Stream) error, destroy func() error) (*Life, error) {
	hold, err := s.HoldContext()
	if err != nil {
		return nil, fmt.Errorf("%s: New: %w", pkg, err)
	}
	if err := s.Do(call, nil, create); err != nil {
		return nil, errors.Join(err, hold.Release())
	}
	return &Life{s: s, hold: hold, pkg: pkg, destroy: destroy}, nil
}

// Acquire holds an open handle for a call; Release ends the hold.
func (l *Life) Acquire(op string) error {
	l.mu.RLock()
	if l.closed {
		return l.closedErr(op)
	}
	return nil
}

// closedErr ends Acquire's hold on a closed handle and says so.
//
//go:noinline
func (l *Life) closedErr(op string) error {
	l.mu.RUnlock()
	return fmt.Errorf("%s: %s: %w", l.pkg, op, cuda.ErrClosed)
}

// Release ends Acquire's hold.
func (l *Life) Release() { l.mu.RUnlock() }

// Lock holds an open handle for a change, waiting for the calls in
// progress; Unlock ends it.
func (l *Life) Lock(op string) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return fmt.Errorf("%s: %s: %w", l.pkg, op, cuda.ErrClosed)
	}
	return nil
}

// Unlock ends Lock's hold.
func (l *Life) Unlock() { l.mu.Unlock() }

// Stream is the handle's stream; the caller holds it (Acquire or Lock).
func (l *Life) Stream() *cuda.Stream { return l.s }

// SetStream changes the handle's stream; the caller holds Lock.
func (l *Life) SetStream(s *cuda.Stream) { l.s = s }

// Do runs f with the handle's context current on a locked thread, even
// after its Stream and Context were closed.
func (l *Life) Do(f func() error) error { return l.hold.Do(f) }

// Close marks the handle closed once the calls in progress have returned,
// then has it destroyed (see the package comment). A second Close is an
// error matching cuda.ErrClosed. cleared runs under the lock, for the
// package's own state.
func (l *Life) Close(cleared func()) error {
	if err := l.Lock("Close"); err != nil {
		return err
	}
	l.closed = true
	if cleared != nil {
		cleared()
	}
	l.mu.Unlock()
	l.destroyLater()
	return nil
}

// Collected is Close for the cleanup of a handle dropped without it: it
// logs once for each kind of handle.
func (l *Life) Collected(kind string) {
	v, _ := droppedKinds.LoadOrStore(l.pkg+"."+kind, new(gosync.Once))
	v.(*gosync.Once).Do(func() {
		slog.Warn(fmt.Sprintf("%s: a %s was dropped without Close; the garbage collector destroyed it (further ones are destroyed without a log)", l.pkg, kind))
	})
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.mu.Unlock()
	l.destroyLater()
}

var droppedKinds gosync.Map // "pkg.Kind" -> *sync.Once

// destroyLater destroys the handle once no capture is in progress, then
// releases the context; failures are logged.
func (l *Life) destroyLater() {
	sync.Postpone(func() {
		if err := l.hold.Do(l.destroy); err != nil {
			slog.Error(l.pkg+": destroying a handle", "err", err)
		}
		if err := l.hold.Release(); err != nil {
			slog.Error(l.pkg+": releasing the context of a handle", "err", err)
		}
	})
}
