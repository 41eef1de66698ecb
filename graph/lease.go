package graph

import (
	"context"
	"log/slog"
	gosync "sync"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Lease attaches release to the capture in progress on stream s, made
// through this package: release runs (once, on a goroutine of this
// package) after the graph made by that capture and every executable graph
// instantiated from it (or updated with it) are destroyed and their last
// launches have finished. When the capture fails, release runs once it has
// ended. ok is false, and release is not kept, when s is not being
// captured through this package.
//
// s may be the stream the capture began on or a stream that joined it
// through an event. Lease may be called from any goroutine; for
// CU_STREAM_PER_THREAD it must be called on the capturing thread.
func Lease(s libcuda.Stream, release func()) (ok bool) {
	if release == nil || InProgress() == 0 {
		return false
	}
	var status libcuda.StreamCaptureStatus
	var id uint64
	if err := libcuda.StreamGetCaptureInfo(s, &status, &id, nil, nil, nil, nil); err != nil ||
		status == libcuda.CU_STREAM_CAPTURE_STATUS_NONE {
		return false
	}
	v, ok := sync.LookupCapture(id, s)
	c, _ := v.(*capture)
	if !ok || c == nil {
		return false
	}
	c.leases.add(release)
	return true
}

// leases are the release functions attached to one capture. The graph
// made by the capture holds a reference, and so does every executable
// graph that can still run its work; the functions run when the last
// reference goes.
type leases struct {
	mu   gosync.Mutex
	refs int
	fns  []func()
}

// newLeases returns leases with one reference, the capture's.
func newLeases() *leases { return &leases{refs: 1} }

func (l *leases) add(f func()) {
	l.mu.Lock()
	l.fns = append(l.fns, f)
	l.mu.Unlock()
}

// held reports whether anything is attached. Once the capture has ended
// nothing more can be, so the answer stays the same.
func (l *leases) held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.fns) > 0
}

func (l *leases) ref() {
	l.mu.Lock()
	l.refs++
	l.mu.Unlock()
}

// unref drops a reference; the last one runs the release functions, in
// the order they were attached, on a goroutine of this package.
func (l *leases) unref() {
	l.mu.Lock()
	l.refs--
	if l.refs > 0 {
		l.mu.Unlock()
		return
	}
	fns := l.fns
	l.fns = nil
	l.mu.Unlock()
	if len(fns) == 0 {
		return
	}
	goBackground(func() {
		for _, f := range fns {
			f()
		}
	})
}

// retireWait is how the background waits for a last launch: on a helper
// thread that sleeps in the driver, never spinning.
var retireWait = sync.Policy{Mode: sync.Blocking}

// retire releases holds once event ev, recorded after each launch, has
// completed, on a goroutine of this package, and destroys ev. An event
// never recorded (no launch) is complete at once. The caller has given
// its references in holds up.
func retire(ev libcuda.Event, holds []*leases) {
	if ev == 0 && len(holds) == 0 {
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
		for _, h := range holds {
			h.unref()
		}
	})
}

func destroyEvent(ev libcuda.Event) {
	if ev == 0 {
		return
	}
	if err := libcuda.EventDestroy(ev); err != nil {
		slog.Error("graph: destroying the launch-tracking event of an executable graph", "err", err)
	}
}
