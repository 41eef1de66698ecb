package graph

import (
	"context"
	"errors"
	"log/slog"
	gosync "sync"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Lease attaches release to the capture in progress on stream s, made
// through this package: release runs once, after the graph made by that
// capture and every executable graph instantiated from it (or updated with
// it) are destroyed or updated again, and their last launches have
// finished. When the capture fails, release runs once it has ended. ok is
// false, and release is not kept, when s is not being captured through
// this package.
//
// release runs on a goroutine of this package, or on the goroutine whose
// call to Exec.Update or Cached.Run finds the launches before the update
// finished already; it runs with no lock of this package held, so it may
// call into this package, except Drain: a release that runs in the
// background is part of the work that Drain waits for, so a Drain made
// there would wait for itself until its context ends.
//
// s may be the stream the capture began on or a stream that joined it
// through an event. Lease may be called from any goroutine; for
// CU_STREAM_PER_THREAD it must be called on the capturing thread.
func Lease(s libcuda.Stream, release func()) (ok bool) { return lease(s, release, false) }

// LeaseCounted is Lease for a release function that gives back one
// reference of something that each lease references once (as hostmem's
// registrations are): when the capture that updates an executable graph
// in place (Exec.Update, Cached.Run) leased the same functions, the same
// func values in the same order and each through LeaseCounted, as the
// capture of the graph it replaces, the earlier leases are released at
// the update, before the launches made before it have finished, since the
// later ones keep the same things referenced past them. An update then
// makes no driver call of its own for the leases (a loop of Cached runs
// that Use the same memory), whether or not those launches have finished.
func LeaseCounted(s libcuda.Stream, release func()) (ok bool) { return lease(s, release, true) }

func lease(s libcuda.Stream, release func(), counted bool) (ok bool) {
	if release == nil || sync.CapturesInProgress() == 0 {
		return false
	}
	f := leaseFn{release, counted}
	// The stream a capture of this package began on needs no driver
	// call (see capture); a stream that joined one, or the per-thread
	// stream, is asked which capture it is in.
	if s != libcuda.CU_STREAM_PER_THREAD && leaseOn(s, f) {
		return true
	}
	var status libcuda.StreamCaptureStatus
	var id uint64
	if err := libcuda.StreamGetCaptureInfo(s, &status, &id, nil, nil, nil, nil); err != nil ||
		status == libcuda.CU_STREAM_CAPTURE_STATUS_NONE {
		return false
	}
	return leaseByID(id, status, s, f)
}

// leases are the release functions attached to one capture. The graph
// made by the capture holds a reference, and so does every executable
// graph that can still run its work; the functions run when the last
// reference goes. A nil *leases is a capture that leased nothing.
//
// Once the last reference is gone and its functions have run, a leases is
// reused for a later capture (leasePool): a loop of Cached runs that lease
// memory then makes none.
type leases struct {
	mu   gosync.Mutex
	refs int
	fns  []leaseFn
}

// leaseFn is one release function and whether it was leased through
// LeaseCounted.
type leaseFn struct {
	f       func()
	counted bool
}

// sameCounted reports whether l and m (neither nil, each referenced by
// the caller, their captures ended) lease the same functions, each
// through LeaseCounted: then m may stand for l (see LeaseCounted). A func
// value is a pointer to its code and captured variables: the same
// pointer is the same function.
func (l *leases) sameCounted(m *leases) bool {
	a, b := l.list(), m.list()
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].counted || !b[i].counted || funcPtr(a[i].f) != funcPtr(b[i].f) {
			return false
		}
	}
	return true
}

// list returns l's functions; they do not change once its capture has
// ended, until its last reference is gone.
func (l *leases) list() []leaseFn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fns
}

func funcPtr(f func()) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&f)) }

var leasePool = gosync.Pool{New: func() any { return new(leases) }}

// newLeases returns leases with one reference, the capture's.
func newLeases() *leases {
	l := leasePool.Get().(*leases)
	l.refs = 1
	return l
}

func (l *leases) add(f leaseFn) {
	l.mu.Lock()
	l.fns = append(l.fns, f)
	l.mu.Unlock()
}

// held reports whether anything is attached. Once the capture has ended
// nothing more can be, so the answer stays the same.
func (l *leases) held() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.fns) > 0
}

func (l *leases) ref() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.refs++
	l.mu.Unlock()
}

// unref drops a reference; the last one runs the release functions, in
// the order they were attached, on a goroutine of this package.
func (l *leases) unref() {
	if !l.drop() {
		return
	}
	goBackground(l.release)
}

// unrefHere is unref for a caller that holds no lock of this package: the
// last reference runs the release functions on the calling goroutine.
func (l *leases) unrefHere() {
	if l.drop() {
		l.release()
	}
}

// drop drops a reference and reports whether it was the last: then the
// caller runs release.
func (l *leases) drop() (last bool) {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refs--
	return l.refs == 0
}

// release runs the functions of leases whose last reference is gone, in
// the order they were attached, and makes l available for reuse; no
// one refers to l any more.
func (l *leases) release() {
	for i, f := range l.fns {
		l.fns[i] = leaseFn{}
		f.f()
	}
	l.fns = l.fns[:0]
	leasePool.Put(l)
}

// retireWait is how the background waits for a last launch: on a helper
// thread that sleeps in the driver, never spinning.
var retireWait = sync.Policy{Mode: sync.Blocking}

// retire releases hold once event ev, which covers every launch, has
// completed, on a goroutine of this package, and destroys ev. An event
// never recorded (no launch) is complete at once. The caller has given
// its reference in hold up.
func retire(ev libcuda.Event, hold *leases) {
	if ev == 0 && hold == nil {
		return
	}
	goBackground(func() {
		if ev != 0 {
			if err := retireWait.Event(context.Background(), ev); err != nil {
				// The GPU may still use what the leases hold: keep it.
				slog.Error("graph: waiting for the last launch of an executable graph failed; the resources it leases are kept", "err", err)
				destroyEvent(ev)
				return
			}
		}
		destroyEvent(ev)
		hold.unrefHere()
	})
}

// retireByContext is retire for launches that no event covers (their
// stream was destroyed before they were settled): hold is released once
// the whole context cu has been idle, and ev is destroyed. The wait runs
// on a goroutine of this package; cuCtxSynchronize is refused during
// captures (it breaks them in every mode), so a wait refused for one is
// tried again once the captures in progress have ended (Postpone: a
// notification, and nothing blocks a capture meanwhile).
func retireByContext(cu libcuda.Context, ev libcuda.Event, hold *leases) {
	if ev == 0 && hold == nil {
		return
	}
	goBackground(func() { releaseAfterContext(cu, ev, hold) })
}

func releaseAfterContext(cu libcuda.Context, ev libcuda.Event, hold *leases) {
	err := sync.Context(context.Background(), cu)
	switch {
	case errors.Is(err, sync.ErrCapturing):
		sync.Postpone(func() { goBackground(func() { releaseAfterContext(cu, ev, hold) }) })
		return
	case err != nil:
		// The GPU may still use what the leases hold: keep it.
		slog.Error("graph: waiting for the context of an executable graph whose last launch's stream is gone failed; the resources it leases are kept", "err", err)
		destroyEvent(ev)
		return
	}
	destroyEvent(ev)
	hold.unrefHere()
}

func destroyEvent(ev libcuda.Event) {
	if ev == 0 {
		return
	}
	if err := libcuda.EventDestroy(ev); err != nil {
		slog.Error("graph: destroying the launch-tracking event of an executable graph: cuEventDestroy", "err", err)
	}
}
