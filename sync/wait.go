package sync

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/purecuda/purecuda/libcuda"
)

// Mode is how a wait proceeds once the first query says the work is not
// finished.
type Mode int

const (
	// Auto spins on the query, then yields between queries, then blocks on
	// a helper thread (or, for a wait that nothing can cancel, on its own):
	// fast for short waits, cheap for long ones.
	Auto Mode = iota
	// Blocking hands the wait to a helper thread at once.
	Blocking
	// Polling spins, yields, then waits on the shared poller, which
	// queries with backoff between its rounds (see Policy.MaxSleep); it
	// never blocks a thread.
	Polling
)

func (m Mode) String() string {
	switch m {
	case Auto:
		return "auto"
	case Blocking:
		return "blocking"
	case Polling:
		return "polling"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Policy says how to wait. The zero value means DefaultPolicy's budgets in
// Auto mode.
type Policy struct {
	Mode Mode
	// Spin is how long the caller queries back to back (default 100µs: a
	// kernel shorter than that is seen finished within one query).
	Spin time.Duration
	// Yield is how long after that the caller queries between
	// runtime.Gosched calls before blocking or sleeping (default 200µs).
	// A goroutine locked to its OS thread pays a thread hand-off for each
	// Gosched (microseconds), so its wake-up is coarser in this phase.
	Yield time.Duration
	// MaxSleep caps the backoff between queries of Polling mode, and of
	// Auto and Blocking mode while every helper thread is busy or the
	// poller spins for other waits (default 1ms). Those waits share one
	// poller, which sleeps at most 100µs between its rounds (or as long
	// as its last round took, when that is longer), or the smallest
	// MaxSleep of its waits when that is less.
	MaxSleep time.Duration
}

// DefaultPolicy is what Stream, Event and Context use.
var DefaultPolicy = Policy{Mode: Auto, Spin: 100 * time.Microsecond, Yield: 200 * time.Microsecond, MaxSleep: time.Millisecond}

func (p Policy) withDefaults() Policy {
	if p.Spin == 0 {
		p.Spin = DefaultPolicy.Spin
	}
	if p.Yield == 0 {
		p.Yield = DefaultPolicy.Yield
	}
	if p.MaxSleep == 0 {
		p.MaxSleep = DefaultPolicy.MaxSleep
	}
	return p
}

// Stream waits with DefaultPolicy until the work submitted to s so far has
// finished. cu is the context s belongs to: needed for the legacy stream
// (0 or CU_STREAM_LEGACY), optional (0) for other streams. See the package
// documentation for CU_STREAM_PER_THREAD.
func Stream(ctx context.Context, cu libcuda.Context, s libcuda.Stream) error {
	return DefaultPolicy.Stream(ctx, cu, s)
}

// Event waits with DefaultPolicy until event e has completed. e must not
// have been recorded in a stream capture: see the package documentation.
func Event(ctx context.Context, e libcuda.Event) error { return DefaultPolicy.Event(ctx, e) }

// EventDone reports whether event e has completed, with one query and
// without waiting: the query runs in relaxed capture mode while captures
// are in progress, as the waits' queries do, so it cannot invalidate
// another goroutine's capture. Like Event, it must not be given an event
// recorded in a capture.
func EventDone(e libcuda.Event) (bool, error) {
	if e == 0 {
		return false, errors.New("sync: query of a nil event")
	}
	err := quickEventQuery(e)
	if errors.Is(err, libcuda.CUDA_ERROR_NOT_READY) {
		return false, nil
	}
	return err == nil, wrap(eventTarget(e), err)
}

// Context waits until all work in context cu has finished.
func Context(ctx context.Context, cu libcuda.Context) error { return DefaultPolicy.Context(ctx, cu) }

// valid reports whether a wait can go by p and ctx: ctx is not nil, the
// Mode is one, no duration is negative (zero means the default). It is
// small enough to be inlined into the waits: the path of a finished wait
// makes no call for it; refuse says what is wrong.
func (p Policy) valid(ctx context.Context) bool {
	return ctx != nil && uint(p.Mode) <= uint(Polling) && p.Spin|p.Yield|p.MaxSleep >= 0
}

// refuse is the error of a wait that valid refuses.
func (p Policy) refuse(ctx context.Context) error {
	switch {
	case ctx == nil:
		return errors.New("sync: nil context.Context (use context.Background())")
	case p.Mode < Auto || p.Mode > Polling:
		return fmt.Errorf("sync: Policy.Mode %v is not a mode", p.Mode)
	case p.Spin < 0 || p.Yield < 0 || p.MaxSleep < 0:
		return fmt.Errorf("sync: Policy durations may not be negative (Spin %v, Yield %v, MaxSleep %v)", p.Spin, p.Yield, p.MaxSleep)
	}
	return nil
}

// Stream waits with p until the work submitted to s so far has finished.
func (p Policy) Stream(ctx context.Context, cu libcuda.Context, s libcuda.Stream) error {
	if !p.valid(ctx) {
		return p.refuse(ctx)
	}
	t := streamTarget{cu: cu, s: s}
	switch s {
	case libcuda.CU_STREAM_PER_THREAD:
		return p.perThread(ctx)
	case 0, libcuda.CU_STREAM_LEGACY:
		if cu == 0 {
			return errors.New("sync: waiting on the legacy stream needs its context")
		}
		return wait(p, ctx, t, guardedQuery(t, queryLimit()))
	}
	// The path of a finished wait, written out: one query between the
	// two additions of the registry's word, no call through an interface
	// or a generic dictionary (issue 29).
	err := errSlow
	if n := enter(queryUnit); n < captureUnit && n&queryMask <= uint64(procs.Load()) {
		err = libcuda.StreamQuery(s)
	}
	if n := state.Add(^(queryUnit - 1)); n >= captureUnit { // leave(queryUnit)
		lastOut(n)
	}
	switch err {
	case nil:
		return nil
	case errSlow: // a capture is admitted, or the queries are at their limit
		err = guardedQuery(t, queryLimit())
	case libcuda.CUDA_ERROR_NOT_READY:
	default:
		err = named("cuStreamQuery", err)
	}
	return wait(p, ctx, t, err)
}

// Event waits with p until e has completed.
func (p Policy) Event(ctx context.Context, e libcuda.Event) error {
	if !p.valid(ctx) {
		return p.refuse(ctx)
	}
	if e == 0 {
		return errors.New("sync: wait on a nil event")
	}
	// quickEventQuery written out, as Stream's first query is: the path
	// of a done event makes no call but the query.
	err := errSlow
	if n := enter(queryUnit); n < captureUnit && n&queryMask <= uint64(procs.Load()) {
		err = libcuda.EventQuery(e)
	}
	if n := state.Add(^(queryUnit - 1)); n >= captureUnit { // leave(queryUnit)
		lastOut(n)
	}
	switch err {
	case nil:
		return nil
	case errSlow: // a capture is admitted, or the queries are at their limit
		err = guardedQuery(eventTarget(e), queryLimit())
	case libcuda.CUDA_ERROR_NOT_READY:
	default:
		err = named("cuEventQuery", err)
	}
	return wait(p, ctx, eventTarget(e), err)
}

// errSlow is the quick queries' answer when the query must go the general
// way (guardedQuery): a capture is admitted, or the queries in flight are
// at their limit. It never leaves the package.
var errSlow = errors.New("sync: query by the general path")

// quickEventQuery is guardedQuery of event e with no limit of queries in
// flight, for EventDone, written out: one query between the two additions
// of the registry's word, no call through an interface or a generic
// dictionary (issue 29). Its errors name the driver call.
func quickEventQuery(e libcuda.Event) error {
	err := errSlow
	if n := enter(queryUnit); n < captureUnit {
		err = libcuda.EventQuery(e)
	}
	if n := state.Add(^(queryUnit - 1)); n >= captureUnit { // leave(queryUnit)
		lastOut(n)
	}
	switch err {
	case nil, libcuda.CUDA_ERROR_NOT_READY:
		return err
	case errSlow: // a capture is admitted
		return guardedQuery(eventTarget(e), 0)
	}
	return named("cuEventQuery", err)
}

// Context waits until all work in cu has finished, on a helper thread.
func (p Policy) Context(ctx context.Context, cu libcuda.Context) error {
	if !p.valid(ctx) {
		return p.refuse(ctx)
	}
	if cu == 0 {
		return errors.New("sync: wait on a nil context")
	}
	if n := CapturesInProgress(); n > 0 {
		return &captureError{what: "context wait", err: fmt.Errorf("%d captures in progress", n)}
	}
	// A context cannot be queried: wait for a helper to be free. A wait
	// whose ctx has ended starts nothing.
	t := contextTarget(cu)
	j := &job{t: t, ctx: ctx, res: make(chan error, 1)}
	if err := helpers.submitWait(ctx, j); err != nil {
		return err
	}
	select {
	case err := <-j.res:
		return wrap(t, err)
	case <-ctx.Done():
		helpers.abandon(j)
		return ctx.Err()
	}
}

// target is something to wait for.
type target interface {
	// query returns nil when finished, CUDA_ERROR_NOT_READY while not.
	// With check, a target that can be captured refuses (ErrCapturing)
	// while it is. It is a potentially unsafe call: call it through
	// guardedQuery.
	query(check bool) error
	// block waits in the driver; it runs on a helper thread in relaxed
	// capture mode.
	block() error
	String() string
}

// wait is the common path of Stream and Event, past the first query,
// whose result is first (the guardedQuery of t, its errors naming the
// driver call). It is generic so that a wait converts nothing to an
// interface until it is handed over.
//
// A wait that the first query does not end spins and yields only in one
// of the spin slots (spinSlots), and only while the shared poller is not
// spinning already: at most a few waits spin at once, whatever the number
// of waiters, and the others join the shared poller at once, which
// queries its newcomers back to back for their Spin budget and between
// yields for their Yield budget (see poller): one goroutine spins for all
// of them instead of each for itself (issue 29). Once the poller spins
// so, the waits in the slots join it as well, with what is left of their
// budgets: many waits that start together cost one goroutine's spinning,
// and the first query of each.
func wait[T target](p Policy, ctx context.Context, t T, first error) error {
	switch err := first; {
	case err == nil:
		return nil
	case err != errBusy && !errors.Is(err, libcuda.CUDA_ERROR_NOT_READY):
		return wrap(t, err)
	}
	if p.Mode == Blocking {
		return onHelper(p, ctx, t)
	}
	p = p.withDefaults()
	if pollerSpins.Load() {
		return polledFresh(p, ctx, t, time.Now().Add(p.Spin+p.Yield))
	}
	limit := readQueryLimit()
	if !takeSpinSlot(limit) {
		return polledFresh(p, ctx, t, time.Now().Add(p.Spin+p.Yield))
	}
	start := time.Now()
	err := spin(p, ctx, t, limit, start)
	giveSpinSlot()
	switch err {
	case errJoin:
		handedOver.Add(1)
		fresh := start.Add(p.Spin + p.Yield)
		if !time.Now().Before(fresh) {
			fresh = time.Time{} // its budgets are spent: an ordinary polled wait
		}
		return polledFresh(p, ctx, t, fresh)
	case errHandOver:
	default:
		return err
	}
	if p.Mode == Auto {
		if ctx.Done() == nil { // a wait that nothing can cancel
			if ok, err := blockOnCaller(t); ok {
				return wrap(t, err)
			}
		}
		return onHelper(p, ctx, t)
	}
	return polled(p, ctx, t)
}

// errHandOver is spin's answer when the wait goes on elsewhere: its
// budgets are spent, or as many queries as can run are in flight.
var errHandOver = errors.New("sync: the wait is handed over")

// errJoin is spin's answer when the shared poller spins for other waits:
// the wait joins it for the rest of its budgets.
var errJoin = errors.New("sync: the wait joins the spinning poller")

// handedOver counts the waits that left their spin slot for the spinning
// poller (errJoin) since the program started.
var handedOver atomic.Int64

// spin queries t back to back for p.Spin, then between runtime.Gosched
// calls for p.Yield, from start, and returns nil when t has finished, its
// error, ctx's error, errHandOver, or errJoin as soon as the shared poller
// spins for other waits (it queries t as often there, and one goroutine
// spinning for all costs less than each spinning for itself).
func spin[T target](p Policy, ctx context.Context, t T, limit int32, start time.Time) error {
	cancelled := ctx.Done()
	// Counted as it goes, with the time read before its last query: the
	// wake-up of a spinning wait pays no clock read for the counts.
	var queries int64
	var since time.Duration
	defer func() {
		spinQueries.Add(queries)
		spinTime.Add(int64(since))
	}()
	for {
		select {
		case <-cancelled:
			return ctx.Err()
		default:
		}
		if pollerSpins.Load() {
			return errJoin
		}
		since = time.Since(start)
		if since > p.Spin+p.Yield {
			return errHandOver
		}
		if since > p.Spin {
			runtime.Gosched()
		}
		queries++
		switch err := guardedQuery(t, limit); {
		case err == errBusy:
			// As many goroutines as can run are querying already: more
			// spinning would only take their CPU. Hand the wait over, to
			// the poller if it spins.
			if pollerSpins.Load() {
				return errJoin
			}
			return errHandOver
		case !errors.Is(err, libcuda.CUDA_ERROR_NOT_READY):
			return wrap(t, err)
		}
	}
}

// spinning counts the waits spinning or yielding on their own goroutine
// (in a spin slot) now. At most spinSlots(GOMAXPROCS) of them do at once,
// so that the CPU spent spinning does not grow with the number of
// waiters: a lone wait still spins, for the quickest wake-up, and the
// others spin together on the shared poller.
var spinning atomic.Int32

// spinSlots is the number of spin slots for GOMAXPROCS procs: a quarter
// of them, at least one and at most four.
func spinSlots(procs int32) int32 { return min(max(procs/4, 1), 4) }

// The counts of the waits that spun in a slot since the program started:
// the waits, their queries there and the time they spent there (ns, to
// the start of their last query).
var spunWaits, spinQueries, spinTime atomic.Int64

// spinningPeak is the most waits seen in spin slots at once (tests read
// and reset it).
var spinningPeak atomic.Int32

// takeSpinSlot takes a spin slot, if one is free.
func takeSpinSlot(procs int32) bool {
	if n := spinning.Add(1); n <= spinSlots(procs) {
		spunWaits.Add(1)
		for {
			peak := spinningPeak.Load()
			if n <= peak || spinningPeak.CompareAndSwap(peak, n) {
				return true
			}
		}
	}
	spinning.Add(-1)
	return false
}

func giveSpinSlot() { spinning.Add(-1) }

// sleepPoll queries with sleeps of growing length between, until t is
// finished: for the per-thread stream, which only its own thread can
// query. Other targets go to the shared poller (polled).
func sleepPoll[T target](p Policy, ctx context.Context, t T) error {
	p = p.withDefaults()
	sleep := 10 * time.Microsecond
	timer := time.NewTimer(sleep)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		if err := guardedQuery(t, 0); !errors.Is(err, libcuda.CUDA_ERROR_NOT_READY) {
			return wrap(t, err)
		}
		sleep = min(2*sleep, p.MaxSleep)
		timer.Reset(sleep)
	}
}

// polled waits for t on the shared poller, until t is finished or ctx
// ends; in the latter case the poller makes no query of t once it has
// returned.
func polled[T target](p Policy, ctx context.Context, t T) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return onPoller(ctx, t, shared.add(t, p.withDefaults().MaxSleep, time.Time{}))
}

// polledFresh is polled for a wait that has not spun, or has cut its
// spinning short: the poller runs its rounds back to back, yielding
// between them, until fresh (when the wait's spinning in a slot of its
// own would have ended; zero for none) before it backs off; p has its
// defaults.
func polledFresh[T target](p Policy, ctx context.Context, t T, fresh time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return onPoller(ctx, t, shared.add(t, p.MaxSleep, fresh))
}

// onPoller waits for w, a wait on t on the shared poller, or for ctx.
func onPoller[T target](ctx context.Context, t T, w *pollWait) error {
	var err error
	if cancelled := ctx.Done(); cancelled == nil {
		err = <-w.done
	} else {
		select {
		case err = <-w.done:
		case <-cancelled:
			w.cancel()
			return ctx.Err()
		}
	}
	polledWakes.Add(1)
	polledWakeNs.Add(mono() - w.sent)
	return wrap(t, err)
}

// onHelper hands the blocking wait to a helper thread and waits for its
// answer or for ctx. When every helper is busy, the wait goes to the
// shared poller.
func onHelper[T target](p Policy, ctx context.Context, t T) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	j := &job{t: t, ctx: ctx, res: make(chan error, 1)}
	if !helpers.submit(j) {
		return polled(p, ctx, t)
	}
	select {
	case err := <-j.res:
		if err == errNoHelper {
			return polled(p, ctx, t)
		}
		return wrap(t, err)
	case <-ctx.Done():
		// The helper may block on work that never ends: its place goes
		// to later waits.
		helpers.abandon(j)
		return ctx.Err()
	}
}

// perThread polls the calling thread's per-thread default stream.
func (p Policy) perThread(ctx context.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t := streamTarget{s: libcuda.CU_STREAM_PER_THREAD}
	err := guardedQuery(t, 0)
	if !errors.Is(err, libcuda.CUDA_ERROR_NOT_READY) {
		return wrap(t, err)
	}
	p = p.withDefaults()
	start := time.Now()
	for time.Since(start) < p.Spin {
		select {
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if err := guardedQuery(t, 0); !errors.Is(err, libcuda.CUDA_ERROR_NOT_READY) {
			return wrap(t, err)
		}
	}
	return sleepPoll(p, ctx, t)
}

// captureError is a wait refused because of a stream capture.
type captureError struct {
	what string
	err  error
}

func (e *captureError) Error() string {
	return "sync: " + e.what + ": stream capture in progress: " + e.err.Error()
}
func (e *captureError) Unwrap() error        { return e.err }
func (e *captureError) Is(target error) bool { return target == ErrCapturing }

// wrap adds what was waited for to a driver error and marks the errors
// that come from a capture.
func wrap[T target](t T, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrCapturing):
		return err
	case errors.Is(err, libcuda.CUDA_ERROR_CAPTURED_EVENT),
		errors.Is(err, libcuda.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED),
		errors.Is(err, libcuda.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
		errors.Is(err, libcuda.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT):
		return &captureError{what: t.String(), err: err}
	}
	return fmt.Errorf("sync: %s: %w", t.String(), err)
}
