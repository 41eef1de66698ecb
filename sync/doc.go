// Package sync waits for the GPU cooperatively: for the work submitted to a
// stream, for an event, or for everything in a context, with a
// context.Context for cancellation.
//
// A wait on something already finished costs one driver query on the
// calling goroutine. Otherwise, in the default Auto mode, the caller spins
// on the query for a short budget (fast wake-up for short kernels), then
// queries between runtime.Gosched calls, and then hands the wait to a
// helper OS thread from a small bounded pool, which blocks in the driver on
// an event created with CU_EVENT_BLOCKING_SYNC (the thread sleeps, no core
// is burnt) while the caller waits on a channel. A wait that nothing can
// cancel (its context.Context has no Done channel, as Background's) blocks
// on the event on its own thread instead, locked and in relaxed capture
// mode for the call, with its current context and mode restored after, in
// one of the helpers' places: the driver then wakes the waiting goroutine's
// own thread, where a helper's answer would cost a second OS thread
// wake-up. When every helper is busy, the wait goes to the shared poller
// instead: one goroutine that queries all such targets in rounds (one
// query a target, however many waits are on it), backs off while none
// finishes and wakes each waiter by its channel, so that the cost of many
// waits does not grow with a timer for each.
//
// Only a few waits spin and yield on their own goroutines at once: a
// quarter of GOMAXPROCS, at least one and at most four (the spin slots).
// A wait that finds every slot taken joins the shared poller at once, and
// the poller runs its rounds back to back, without sleeping, for as long
// as such a wait would have spun and yielded: one goroutine spins for all
// of them. While it does, later waits join it without spinning, and the
// waits in the slots leave them for it. So a lone wait wakes as quickly as
// a spinning one, and a thousand waits cost about what one thread querying
// them all costs, not a core each. Cancelling the context.Context returns
// ctx.Err() at once and leaves the GPU work alone. Policy sets the budgets
// and the Blocking and Polling modes.
//
// # Capture
//
// The queries are "potentially unsafe" calls in CUDA's stream capture
// rules: made in the default (global) capture mode while another thread
// captures in global mode, they fail and invalidate that capture. Package
// sync therefore keeps count of the captures in progress that it has been
// told about (package graph tells it of every capture it makes; code that
// begins captures through libcuda directly can call StartCapture). This
// registry is the only one: graph and hostmem read it (CapturesInProgress),
// and the work postponed until captures end (Postpone) is queued in it and
// started by the end of the last capture. Code that makes potentially
// unsafe calls of its own runs them through CaptureSafe (or Relaxed). A
// capture start waits, blocked on a condition, for the unsafe calls in
// flight to end (for a context wait's only until it is in the driver: see
// Contexts). While none is in progress a query is made as it is; while any
// is, queries run on a locked OS thread in relaxed capture mode and the
// caller's mode is restored after. Waiting on a stream that is being captured, or on a
// whole context while any known capture is in progress, returns an error
// matching ErrCapturing and does not touch the capture.
//
// An event recorded in a capture is the exception: no driver call tells
// such an event apart from another without querying it, and the query
// (which fails with CUDA_ERROR_CAPTURED_EVENT, also an ErrCapturing error
// here) invalidates the capture, in relaxed mode too. Do not wait on events recorded while their stream was being
// captured. A capture begun through the driver without StartCapture cannot
// be seen, and a query in global mode from another goroutine can invalidate
// it, as the driver documents for global mode.
//
// # Special streams
//
// The legacy default stream (a NULL Stream or CU_STREAM_LEGACY) belongs to
// a context: Stream needs that context, and waits for the legacy stream
// of it on any thread. CU_STREAM_PER_THREAD names a different stream on
// every OS thread. Go moves goroutines between threads, so a goroutine that
// submits work to the per-thread stream and then waits on it means the
// stream of the thread it was on when it submitted, which only
// runtime.LockOSThread makes certain. Stream therefore waits for the
// per-thread stream of the calling thread, polling on that thread and never
// handing the wait to a helper, and the caller must hold LockOSThread from
// submission to wait.
//
// # Threads
//
// Every goroutine inside a driver call holds an OS thread, so the number of
// goroutines querying at once is bounded by GOMAXPROCS (the others hand
// their wait to a helper or to the shared poller) and blocking waits by
// MaxHelpers; the shared poller is one goroutine. Thousands of goroutines
// can wait at once with a bounded number of threads. The bound is
// GOMAXPROCS as a wait last read it: a wait reads it again when its first
// query finds the work unfinished and it goes on to spin on its own, so
// after runtime.GOMAXPROCS changes it, the bound follows at the first such
// wait.
//
// # Contexts
//
// A whole context can only be waited for with cuCtxSynchronize, which
// blocks, so Context always waits on a helper thread, whatever the mode.
// Whether that thread sleeps or spins is set by the context's scheduling
// flags (CU_CTX_SCHED_BLOCKING_SYNC sleeps). cuCtxSynchronize is refused,
// and invalidates the context's captures, when it reaches the driver while
// a capture is in progress, in every capture mode; once inside the driver,
// blocked on unfinished work, it harms no capture begun after it on
// another thread. So Context calls it
// only while no registered capture is in progress (else it returns an
// ErrCapturing error, without a driver call), and a capture that starts
// while the call is in flight waits for it only as long as the call takes
// to reach the driver, with a wide margin (10ms from the call's admission),
// and then begins beside it: a capture never waits longer than that behind
// a context wait, however long the context's work runs. ReadStats counts
// the calls in flight and the captures admitted beside them.
//
// What remains is a risk this package cannot remove, since Go cannot see
// the moment the call passes the driver's check: a helper thread that is
// descheduled for longer than the bound between its admission and that
// check, or a driver that holds the call behind a lock for as long (a
// device-wide fence of another thread's cuMemHostUnregister or cuMemFree,
// say), lets a capture begin first. The call is then refused, the capture
// invalidated (its end says so), the wait returns an ErrCapturing error,
// and ReadStats counts it in ContextSyncsRefused.
//
// # Cancellation
//
// A wait whose context.Context ends returns ctx.Err() at once, and a wait
// whose context has ended before it was handed to a helper starts nothing.
// A wait on the shared poller that returns has its target dropped there:
// no query of it is made after the wait has returned.
// A helper blocked on work that never ends is abandoned by its waiter: its
// place among the MaxHelpers goes to later waits, as long as fewer than
// MaxAbandoned helpers are abandoned. ReadStats counts both. An abandoned
// helper that waits for an event goes on waiting for that event itself
// (cuEventSynchronize), and one handed the wait just before it was
// cancelled may still start that call: after a cancelled wait on an event
// in Auto or Blocking mode, keep the event until ReadStats shows no
// abandoned helper, or wait in Polling mode where the event must be
// destroyed at once. (A stream's wait synchronizes an event of the
// helper's own, so a stream may be destroyed after a cancelled wait.) A helper
// whose thread cannot enter relaxed capture mode logs it and ends; its
// wait polls instead.
//
// # A lost context
//
// After a kernel fault every query in the context fails with a sticky
// Result (an illegal address, a launch failure, ...): a wait returns that
// error at once, naming the call, and it matches libcuda.ErrContextLost
// (errors.Is). Nothing waits on a lost context: the process must restart
// to use the device again.
package sync
