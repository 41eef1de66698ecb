package graph

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	gosync "sync"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Exec is an executable graph: launch it on streams, update it from newly
// captured graphs, destroy it when done. Destroy does not wait for its
// launches: what its graphs lease is released in the background once the
// last launch has finished.
type Exec struct {
	st      *execState
	cleanup runtime.Cleanup
}

// execState is an Exec's state, shared with its GC backstop.
type execState struct {
	mu  gosync.Mutex
	raw libcuda.GraphExec // 0 once destroyed
	ctx libcuda.Context
	// hold is the reference on the leases of the graph this executable
	// graph runs, whose release waits for it; while there is one, last
	// tracks the launches (see state). Without one, last is complete,
	// or 0.
	hold *leases
	last libcuda.Event
	// state says how the launches are followed (track.go). They are
	// followed lazily: a launch on a stream of the caller's records
	// nothing, but notes the stream and its unique id (cuStreamGetId,
	// asked once per stream), and the state is pending: last does not
	// cover the launches yet. An executable graph's launches run one
	// after another, so recording last on the stream of the latest launch
	// covers them all; that is done when the launches must be known
	// finished (settle: at an update, at Destroy), not after each launch,
	// which C's launch loops do not pay either (issue 29). A launch on the
	// legacy or per-thread stream, or with no id to be had, records last
	// at once, and so does every launch in the eager state: after an
	// update that had to know whether the launches before it had finished
	// (its leases did not stand for the earlier ones, see LeaseCounted),
	// since an event recorded at the update itself is seldom complete
	// yet, and the next update will ask again. When the state is
	// untracked, what is leased is never released (the references are
	// dropped without unref), and no event is recorded.
	state      track
	lastStream libcuda.Stream
	lastID     uint64 // lastStream's unique id; 0 for none
}

// newExec makes an Exec of raw, which takes over the reference hold (nil
// for none) and event ev.
func newExec(raw libcuda.GraphExec, cu libcuda.Context, ev libcuda.Event, hold *leases) *Exec {
	st := &execState{raw: raw, ctx: cu, hold: hold, last: ev}
	if hold != nil {
		st.state = trackRecorded // last, never recorded, is complete
	}
	e := &Exec{st: st}
	e.cleanup = runtime.AddCleanup(e, func(st *execState) {
		sync.Postpone(func() {
			slog.Debug("graph: an Exec was not destroyed; destroying it after the GC found it unreachable")
			st.mu.Lock()
			defer st.mu.Unlock()
			if err := st.destroy(); err != nil {
				slog.Error("graph: destroying an unreachable Exec", "err", err)
			}
		})
	}, st)
	return e
}

// Raw returns the driver's handle, valid until Destroy. Do not destroy it,
// do not launch it directly (launches made around Exec are not tracked for
// leases), and keep e reachable while using it (runtime.KeepAlive).
func (e *Exec) Raw() libcuda.GraphExec {
	e.st.mu.Lock()
	defer e.st.mu.Unlock()
	return e.st.raw
}

// Launch launches e on stream s. The launch runs after the work issued on
// s before it and after e's previous launches.
//
// A launch into a stream that is being captured is refused with an error
// matching libcuda.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, before the driver
// sees it: the driver refuses it too and invalidates the capture. The
// check is made while package sync knows of captures in progress.
func (e *Exec) Launch(s libcuda.Stream) error {
	st, err := e.lock("Launch")
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	if sync.CapturesInProgress() > 0 {
		// The driver refuses a launch into a capture and invalidates the
		// capture (measured on an H200): refuse it before the driver does.
		capturing, err := sync.Capturing(s)
		if err != nil {
			return fmt.Errorf("graph: Launch on %s: %w", streamName(s), dl.Failed("", "cuStreamIsCapturing", err))
		}
		if capturing {
			return fmt.Errorf("graph: Launch on %s: an executable graph cannot be launched into a stream capture: %w",
				streamName(s), libcuda.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
		}
	}
	if !st.state.follows() { // nothing to track, or no longer tracked
		if err := libcuda.GraphLaunch(st.raw, s); err != nil {
			return fmt.Errorf("graph: Launch on %s: %w", streamName(s), dl.Failed("", "cuGraphLaunch", err))
		}
		return nil
	}
	return st.launchTracked(s)
}

// launchTracked launches and notes the launch for last (see pending).
// st.mu held.
func (st *execState) launchTracked(s libcuda.Stream) error {
	special := false
	switch s {
	case 0, libcuda.CU_STREAM_LEGACY, libcuda.CU_STREAM_PER_THREAD:
		// Which stream these mean depends on the thread: launch and record
		// on the same one.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		special = true
	}
	if err := libcuda.GraphLaunch(st.raw, s); err != nil {
		return fmt.Errorf("graph: Launch on %s: %w", streamName(s), dl.Failed("", "cuGraphLaunch", err))
	}
	if !special && st.state != trackEager {
		if s == st.lastStream && st.lastID != 0 {
			st.move(trackPending)
			return nil
		}
		// A stream not launched on last: its id, asked while no capture
		// is in progress (a capture's rules may count the call as
		// unsafe); else the event is recorded now.
		var id uint64
		ran, err := sync.IfNoCapture(func() error { return libcuda.StreamGetId(s, &id) })
		if ran && err == nil && id != 0 {
			st.lastStream, st.lastID = s, id
			st.move(trackPending)
			return nil
		}
	}
	st.lastStream, st.lastID = 0, 0
	if st.state == trackPending {
		st.move(trackRecorded) // by the record below, or untracked
	}
	if err := libcuda.EventRecord(st.last, s); err != nil {
		st.move(trackUntracked)
		return fmt.Errorf("graph: Launch on %s: launched, but its end cannot be tracked, so what the graph leases is kept for good: %w", streamName(s), dl.Failed("", "cuEventRecord", err))
	}
	return nil
}

// settle records last on the stream of the latest launch if launches are
// pending, so that last completes once every launch has; it reports false
// when that cannot be done: the stream was destroyed (its id is not the
// one noted: the driver gives a destroyed stream's handle to the next
// stream), is being captured (a record would join the capture), or the
// record failed. Then only a wait for the whole context covers the
// launches. st.mu held; the caller runs it in relaxed mode, or in its own
// while no capture is in progress.
func (st *execState) settle() bool {
	if st.state != trackPending {
		return true
	}
	capturing, err := sync.Capturing(st.lastStream)
	if err != nil || capturing {
		return false
	}
	var id uint64
	if err := libcuda.StreamGetId(st.lastStream, &id); err != nil || id != st.lastID {
		return false
	}
	if err := libcuda.EventRecord(st.last, st.lastStream); err != nil {
		return false
	}
	st.move(trackRecorded)
	return true
}

// idle reports whether launches are pending and the stream of the latest
// is idle (the same stream, not being captured, its query finished): then
// every launch has finished, and last, complete, serves the launches
// after; the state becomes recorded. One query of the stream instead of a record
// of last and a query of it, which is seldom complete so soon. st.mu
// held; run as settle is.
func (st *execState) idle() bool {
	if st.state != trackPending {
		return false
	}
	capturing, err := sync.Capturing(st.lastStream)
	if err != nil || capturing {
		return false
	}
	var id uint64
	if err := libcuda.StreamGetId(st.lastStream, &id); err != nil || id != st.lastID {
		return false
	}
	if libcuda.StreamQuery(st.lastStream) != nil {
		return false
	}
	st.move(trackRecorded)
	return true
}

// retire retires the leases held for the launches made so far, last and
// hold, which the caller gives up and replaces, moving the state on: on
// last when settled, else once the whole context is idle. st.mu held.
func (st *execState) retire(settled bool) {
	if settled {
		retire(st.last, st.hold)
	} else {
		retireByContext(st.ctx, st.last, st.hold)
	}
}

// Upload uploads e's work to the device on stream s ahead of its launch,
// so that the first launch costs no more than later ones.
func (e *Exec) Upload(s libcuda.Stream) error {
	st, err := e.lock("Upload")
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	if err := libcuda.GraphUpload(st.raw, s); err != nil {
		return fmt.Errorf("graph: Upload on %s: %w", streamName(s), dl.Failed("", "cuGraphUpload", err))
	}
	return nil
}

// Update updates e in place with the node parameters of g, which must
// have e's topology (the same nodes, of the same types, with the same
// dependencies). inPlace is true when it did; launches after it run g's
// work, launches before it are not affected. inPlace is false, with a nil
// error, when the driver refused the update because g differs too much
// (CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE): e is left as it was, and g should
// be instantiated instead.
//
// After an update e keeps g's leases instead of those of the graphs it
// was made from before, which are released once the launches made before
// the update have finished (and their graphs are destroyed). When those
// launches have finished already, as in a loop that waits for each launch,
// the release runs on the calling goroutine before Update returns, after
// e and g are unlocked; else on a goroutine of this package.
func (e *Exec) Update(g *Graph) (inPlace bool, err error) {
	if g == nil {
		return false, errors.New("graph: Update: nil graph")
	}
	st, err := e.lock("Update")
	if err != nil {
		return false, err
	}
	if err := g.lock("Update: the new graph"); err != nil {
		st.mu.Unlock()
		return false, err
	}
	inPlace, done, err := st.update(g.raw, g.leases, 0)
	g.mu.Unlock()
	st.mu.Unlock()
	done.unrefHere() // no lock of this package held: a release may call back
	return inPlace, err
}

// updateRaw is Update with the driver's graph raw and its leases l, for
// Cached, whose goroutine is locked to its thread with context cur
// current; the caller runs done's release (unrefHere) with no lock held.
func (e *Exec) updateRaw(raw libcuda.Graph, l *leases, cur libcuda.Context) (inPlace bool, done *leases, err error) {
	st, err := e.lock("Update")
	if err != nil {
		return false, nil, err
	}
	defer st.mu.Unlock()
	return st.update(raw, l, cur)
}

// update updates the executable graph with the driver's graph raw, whose
// leases are l, and takes a reference on l when they hold anything; st.mu
// is held. cur is the context current on the caller's locked thread, or 0
// when that is not known: when it is the executable graph's, the update
// makes no driver call for the thread's context. When the launches before
// the update have finished, the event that tracked them serves the
// launches after it, and done is the reference on the old leases, for the
// caller to drop once it holds no lock of this package; else the old
// leases are retired in the background (retire) and a new event tracks
// the new launches.
func (st *execState) update(raw libcuda.Graph, l *leases, cur libcuda.Context) (inPlace bool, done *leases, err error) {
	held := l.held()
	u := updateRun{st: st, raw: raw, held: held,
		// The new leases hold what the old ones do: the old are released
		// at the update whether or not the launches before it have
		// finished, since last, settled on the stream of the latest
		// launch, tracks those launches for the new leases too (an
		// executable graph's launches run one after another).
		transfer: held && st.hold != nil && st.state.follows() && st.hold.sameCounted(l),
	}
	if cur != 0 && cur == st.ctx {
		err = sync.CaptureSafe(u.run)
	} else {
		err = sync.CaptureSafeIn(st.ctx, u.run)
	}
	if !u.updated {
		return false, nil, updateErr(u.info.Result, err)
	}
	if err != nil {
		err = fmt.Errorf("graph: Update: updated, but: %w", err)
	}
	done, err = st.updated(&u, l, err)
	return true, done, err
}

// oldLaunches is what an update found of the launches made before it.
type oldLaunches uint8

const (
	// oldUnsettled: last could not be recorded after the latest launch:
	// only a wait for the whole context covers them.
	oldUnsettled oldLaunches = iota
	// oldSettled: last covers them; they may still run.
	oldSettled
	// oldFinished: they have finished (or none were made): last, complete,
	// serves the launches after the update.
	oldFinished
)

// updateRun is one update's driver work, run as sync.CaptureSafe runs a
// call, and what it found.
type updateRun struct {
	st             *execState
	raw            libcuda.Graph
	held, transfer bool // the new graph leases something; its leases stand for the old ones
	info           libcuda.GraphExecUpdateResultInfo
	updated        bool        // the driver updated the executable graph
	old            oldLaunches // what became of the launches before it
	ev             libcuda.Event
}

// run updates the executable graph, judges the launches before the update
// and makes the event that tracks the launches after it when last cannot.
func (u *updateRun) run() error {
	st := u.st
	if err := libcuda.GraphExecUpdate(st.raw, u.raw, &u.info); err != nil {
		return dl.Failed("", "cuGraphExecUpdate", err)
	}
	u.updated = true
	if st.state == trackUntracked {
		return nil
	}
	u.old = st.judge(u.transfer)
	if u.held && u.old != oldFinished {
		return newEvent(&u.ev)
	}
	return nil
}

// judge says what became of the launches made so far, at an update whose
// new leases stand for the old ones when transfer. Without a hold no
// launch has recorded last since it was found complete: it still is. New
// leases that stand for the old ones (LeaseCounted) need no query: the old
// go now either way, and last goes on covering the launches, pending or
// not. st.mu held; run as settle is.
func (st *execState) judge(transfer bool) oldLaunches {
	finished := oldSettled
	if st.last != 0 {
		finished = oldFinished
	}
	if st.hold == nil || transfer || st.idle() {
		return finished
	}
	if !st.settle() {
		return oldUnsettled
	}
	if st.last != 0 && libcuda.EventQuery(st.last) == nil {
		return oldFinished
	}
	return oldSettled
}

// updateErr is the error of an update the driver did not make: none when
// it refused the new graph's topology, which Update reports as not in
// place.
func updateErr(result libcuda.GraphExecUpdateResult, err error) error {
	switch {
	case errors.Is(err, libcuda.CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE):
		return nil
	case result != libcuda.CU_GRAPH_EXEC_UPDATE_SUCCESS:
		return fmt.Errorf("graph: Update (%v): %w", result, err)
	}
	return fmt.Errorf("graph: Update: %w", err)
}

// updated moves the state on after the driver updated the executable
// graph (u), whose new leases are l: it retires the old leases or hands
// them back as done (when last serves the new launches), and takes a
// reference on l when they hold anything. err is the update's error so
// far. st.mu held.
func (st *execState) updated(u *updateRun, l *leases, err error) (done *leases, _ error) {
	settled := u.old != oldUnsettled
	if u.held && st.state != trackUntracked && u.old != oldFinished && u.ev == 0 {
		// Without an event the new launches cannot be tracked: what the
		// new graph leases is kept for good. The old launches still are.
		st.retire(settled)
		st.hold, st.last = nil, 0
		st.move(trackUntracked)
	}
	if st.state == trackUntracked {
		l.ref() // never dropped
		if err != nil {
			err = fmt.Errorf("%w; its launches cannot be tracked, so what its graphs lease is kept for good", err)
		}
		return nil, err
	}
	if u.old == oldFinished {
		done = st.hold // last serves the new launches
	} else {
		st.retire(settled)
		st.last = u.ev // 0 when nothing is held
	}
	st.hold = nil
	switch {
	case !u.held:
		st.move(trackNone)
		return done, err
	case u.transfer:
		// Launches still pending stay so: last goes on covering them.
		if st.state == trackEager {
			st.move(trackRecorded)
		}
	default:
		st.move(trackEager)
	}
	l.ref()
	st.hold = l
	return done, err
}

// Destroy destroys e. It does not wait for e's launches: the leases it
// keeps are released in the background once its last launch has finished
// (see Drain).
func (e *Exec) Destroy() error {
	st, err := e.lock("Destroy")
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	e.cleanup.Stop()
	if err := st.destroy(); err != nil {
		return fmt.Errorf("graph: Destroy: %w", err)
	}
	return nil
}

// destroy destroys the executable graph and retires its leases. st.mu held.
func (st *execState) destroy() error {
	if st.raw == 0 {
		return nil
	}
	raw := st.raw
	st.raw = 0
	settled := true
	if err := sync.Relaxed(func() error {
		if st.hold != nil && st.state.follows() {
			settled = st.settle()
		}
		return execDestroy(raw)
	}); err != nil {
		// It may still exist, and run: keep what it leases.
		destroyEvent(st.last)
		st.hold, st.last = nil, 0
		st.move(trackDestroyed)
		return err
	}
	if st.state == trackUntracked {
		destroyEvent(st.last)
	} else {
		st.retire(settled)
	}
	st.hold, st.last = nil, 0
	st.move(trackDestroyed)
	return nil
}

// lock locks e's state for operation op, or returns ErrDestroyed unlocked.
func (e *Exec) lock(op string) (*execState, error) {
	st := e.st
	st.mu.Lock()
	if st.raw == 0 {
		st.mu.Unlock()
		return nil, fmt.Errorf("graph: %s: %w", op, ErrDestroyed)
	}
	return st, nil
}
