package cuda

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"slices"
	gosync "sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Host functions go through one of two C-callable functions: HostFunc's,
// on Linux amd64 and arm64, through the queue of hostq.go, whose callback
// never enters Go; the others through one made once (newHostCallback),
// which enters Go on the driver's thread. Each takes an entry of
// hostFuncs' for its function, and the entry's address is the driver's
// user data. The entries are allocated hostChunk at a time and never
// freed, so that a HostFunc allocates nothing once there are enough of
// them.
//
// The driver's side never takes hostFuncs.mu, which the submitting
// goroutines hold while they take entries: an entry's fields are written
// before its state says it is in use (an atomic store, which the driver's
// side loads), and an entry whose function has run (or, for a function
// captured into a graph, whose graph is gone) is given back onto
// hostReturned, a lock-free stack that the next HostFunc to find no free
// entry takes whole.
var hostFuncs struct {
	once        gosync.Once
	trampoline  uintptr
	mu          gosync.Mutex
	chunks      []*[hostChunk]hostEntry // every entry, kept reachable while the driver holds one
	free        []*hostEntry            // entries not in use, the most recently freed last
	dispatching bool                    // the queue's dispatcher runs
}

// hostReturned is the stack of entries given back since the free list
// last took them; hostPending counts the entries in use, hostQueued those
// of them submitted through the queue (hostq.go).
var (
	hostReturned atomic.Pointer[hostEntry]
	hostPending  atomic.Int64
	hostQueued   atomic.Int64
)

const hostChunk = 64

type hostEntry struct {
	f      func()
	keep   bool         // captured: runs at every launch of the graph
	direct bool         // runs on the driver's thread (HostFuncOnDriverThread)
	queued bool         // submitted through the queue (hostq.go): the driver's thread does not enter Go
	st     *streamState // submitted outside a capture: where a failure is reported
	used   atomic.Bool  // taken by a HostFunc and not given back; stored after the fields above
	next   *hostEntry   // on hostReturned
}

// takeHostEntry takes a free entry for f; hostFuncs.mu is held.
func takeHostEntry(f func(), st *streamState, keep, direct bool) *hostEntry {
	if len(hostFuncs.free) == 0 {
		for e := hostReturned.Swap(nil); e != nil; {
			next := e.next
			e.next = nil
			hostFuncs.free = append(hostFuncs.free, e)
			e = next
		}
	}
	if len(hostFuncs.free) == 0 {
		c := new([hostChunk]hostEntry)
		hostFuncs.chunks = append(hostFuncs.chunks, c)
		for i := len(c) - 1; i >= 0; i-- {
			hostFuncs.free = append(hostFuncs.free, &c[i])
		}
	}
	n := len(hostFuncs.free)
	e := hostFuncs.free[n-1]
	hostFuncs.free[n-1] = nil
	hostFuncs.free = hostFuncs.free[:n-1]
	e.f, e.st, e.keep, e.direct, e.queued = f, st, keep, direct, hostQueueing && !direct
	e.used.Store(true)
	hostPending.Add(1)
	if e.queued {
		hostQueued.Add(1)
		startHostDispatcher()
	}
	return e
}

// giveBackHostEntry makes e free again. It takes no lock: the driver's
// side calls it.
func giveBackHostEntry(e *hostEntry) {
	queued := e.queued
	e.f, e.st = nil, nil
	e.used.Store(false)
	for {
		top := hostReturned.Load()
		e.next = top
		if hostReturned.CompareAndSwap(top, e) {
			break
		}
	}
	hostPending.Add(-1)
	if queued {
		hostQueued.Add(-1)
	}
}

// takeCall reads what the driver's call of e needs, and gives e back
// unless it is captured; ok is false for an entry that is not in use (a
// call the table does not know, logged).
func takeCall(e *hostEntry) (f func(), st *streamState, direct, ok bool) {
	if e == nil || !e.used.Load() {
		slog.Error("cuda: the driver called a host function that is not in the table")
		return nil, nil, false, false
	}
	f, st, direct = e.f, e.st, e.direct
	if !e.keep {
		giveBackHostEntry(e)
	}
	return f, st, direct, true
}

// hostTrampoline is the Go side of the function the driver calls for
// every host function: e is the driver's user data, the function's entry.
func hostTrampoline(e *hostEntry) {
	hostStats.entered.Add(1)
	f, st, direct, ok := takeCall(e)
	if !ok {
		return
	}
	var err error
	if direct {
		err = runOnDriverThread(f)
	} else {
		err = runHostFunc(f)
	}
	if err != nil {
		reportHostErr(st, err)
	}
}

// reportHostErr keeps the failure of a host function for st's next Sync,
// or logs it for one captured into a graph (st nil).
func reportHostErr(st *streamState, err error) {
	if st != nil {
		st.hostFailed(err)
		return
	}
	logErr("a host function of a graph failed", err)
}

// runHostFunc runs f on one of the host workers, goroutines that the Go
// runtime made, and waits for it. The thread that calls the trampoline is
// the driver's, not the Go runtime's: a runtime.Goexit there (t.Fatal in a
// test) ends the process (the runtime throws: no deferred call can stop a
// Goexit), and a panic must not unwind into the driver. On a worker, a
// panic is recovered and a Goexit ends that worker only; both come back
// here as an error.
//
// A worker outlives its call: it waits for the next one for
// hostWorkerIdle before it ends, so that the host functions of a loop (a
// graph launched again and again) cost a hand-off each instead of a new
// goroutine.
//
// The hand-off is kept off the OS's scheduler where it can be: waking a
// parked worker, and then the driver's thread once the worker is done,
// each cost an OS thread wake-up (tens of µs on a server whose idle cores
// sleep deeply). So a worker that has just finished a call keeps checking
// for the next one for hostWorkerSpin (yielding to other goroutines
// between checks) before it parks, and a caller that finds its worker so
// checking checks for the result for up to hostCallerSpin before it
// blocks. A caller whose worker had parked checks for up to hostWakeSpin,
// the time the worker's own wake-up may take: the driver's thread then
// costs no second wake-up. The callers spin only when GOMAXPROCS leaves Ps
// to spare (see spinCall), as the worker read it last. Both spins are
// bounded; the caller's does not yield, since the driver's thread holds
// its P while in Go and a yield would hand the P away and park the
// thread, the very wake-up the spin saves.
func runHostFunc(f func()) error {
	w := idleHostWorker()
	limit := time.Duration(0)
	switch {
	case w.spinning.Load():
		limit = hostCallerSpin
	case w.spare.Load():
		limit = hostWakeSpin
	}
	hostStats.calls.Add(1)
	w.in <- f // w.in has room for one call: this never blocks
	var r hostResult
	if limit == hostWakeSpin {
		hostStats.wakeSpins.Add(1)
	}
	switch {
	case limit == 0 || !w.spinResult(&r, limit):
		r = <-w.out
	case limit == hostWakeSpin:
		hostStats.woken.Add(1)
	}
	if !r.exited {
		putHostWorker(w)
	}
	return r.err
}

// runOnDriverThread runs f on the calling thread, the driver's, for
// HostFuncOnDriverThread: no hand-off, no wake-up of another thread. A
// panic is recovered here and returned as a *HostFuncError, so that it
// never unwinds into the driver. A runtime.Goexit cannot be stopped (no
// deferred call can), and on a thread that the Go runtime did not create
// the runtime ends the process after the deferred calls: it is logged
// first, so that the cause is said.
func runOnDriverThread(f func()) (err error) {
	hostStats.direct.Add(1)
	returned := false
	defer func() {
		if returned {
			return
		}
		if p := recover(); p != nil {
			err = &HostFuncError{Panic: p, Stack: debug.Stack()}
			return
		}
		slog.Error("cuda: a host function submitted with Stream.HostFuncOnDriverThread called runtime.Goexit (t.Fatal, t.FailNow or t.SkipNow in a test?) on the driver's thread: the Go runtime ends the program; submit it with Stream.HostFunc instead")
	}()
	f()
	returned = true
	return nil
}

// spinResult checks for w's result for up to limit without blocking; it
// reports whether the result came.
func (w *hostWorker) spinResult(r *hostResult, limit time.Duration) bool {
	start := time.Now()
	for {
		for range 32 {
			select {
			case *r = <-w.out:
				hostStats.unblocked.Add(1)
				return true
			default:
			}
		}
		if time.Since(start) > limit {
			return false
		}
	}
}

// hostWorkerIdle is how long a host worker waits for its next call
// before it ends; hostWorkerSpin, how long of that it checks for the call
// before it parks; hostCallerSpin, how long the driver's thread checks for
// a spinning worker's result before it blocks, and hostWakeSpin for a
// parked worker's (which is woken first).
const hostWorkerIdle = 100 * time.Millisecond

const (
	hostSpinProcs  = 4
	hostWorkerSpin = 50 * time.Microsecond
	hostCallerSpin = 30 * time.Microsecond
	hostWakeSpin   = 100 * time.Microsecond
)

// hostStats counts hand-offs, for tests: calls (all of them), warm (those
// that a spinning worker took without being woken), unblocked (those
// whose caller had the result without blocking), wakeSpins (those whose
// caller checked for the result of a worker it had to wake) and woken (of
// those, the ones that had it without blocking); direct counts the host
// functions run on the driver's thread, with no hand-off.
//
// entered counts the calls from the driver that entered Go (all of them,
// except HostFunc's where it goes through the queue); batched, the
// records the dispatcher handed to another goroutine because it took them
// together with another.
var hostStats struct {
	calls, warm, unblocked, wakeSpins, woken, direct, entered, batched atomic.Uint64
}

// A hostWorker is a goroutine that runs host functions handed to it, one
// at a time.
type hostWorker struct {
	in       chan func()     // room for one call
	out      chan hostResult // room for one result
	spinning atomic.Bool     // checking for its next call instead of parked
	spare    atomic.Bool     // GOMAXPROCS >= hostSpinProcs, as it read it last
}

type hostResult struct {
	err    error
	exited bool // the function called runtime.Goexit: the worker is gone
}

// hostWorkers holds the idle workers, the most recently idle last.
var hostWorkers struct {
	mu   gosync.Mutex
	idle []*hostWorker
}

// idleHostWorker takes an idle worker, or starts one.
func idleHostWorker() *hostWorker {
	hostWorkers.mu.Lock()
	if n := len(hostWorkers.idle); n > 0 {
		w := hostWorkers.idle[n-1]
		hostWorkers.idle[n-1] = nil
		hostWorkers.idle = hostWorkers.idle[:n-1]
		hostWorkers.mu.Unlock()
		return w
	}
	hostWorkers.mu.Unlock()
	w := &hostWorker{in: make(chan func(), 1), out: make(chan hostResult, 1)}
	w.spare.Store(runtime.GOMAXPROCS(0) >= hostSpinProcs) // once per worker
	go w.loop()
	return w
}

// putHostWorker makes w idle again.
func putHostWorker(w *hostWorker) {
	hostWorkers.mu.Lock()
	hostWorkers.idle = append(hostWorkers.idle, w)
	hostWorkers.mu.Unlock()
}

// loop runs the calls handed to w until it has been idle for
// hostWorkerIdle, or a call ends it (runtime.Goexit).
func (w *hostWorker) loop() {
	idle := time.NewTimer(hostWorkerIdle)
	defer idle.Stop()
	// Whether to spin, from GOMAXPROCS as read when w started or last
	// woke from a park: runtime.GOMAXPROCS takes the scheduler's lock, so
	// a hand-off that a spinning worker takes does not read it (a change
	// takes effect after w's next park, at most one spin later).
	spin := w.spare.Load()
	for {
		var f func()
		if spin {
			f = w.spinCall()
		}
		if f == nil {
			select {
			case f = <-w.in:
				spin = runtime.GOMAXPROCS(0) >= hostSpinProcs
				w.spare.Store(spin)
			case <-idle.C:
				// Leave the idle list, unless a caller has just taken w:
				// then its call is on the way.
				hostWorkers.mu.Lock()
				i := slices.Index(hostWorkers.idle, w)
				if i >= 0 {
					hostWorkers.idle = slices.Delete(hostWorkers.idle, i, i+1)
				}
				hostWorkers.mu.Unlock()
				if i >= 0 {
					return
				}
				idle.Reset(hostWorkerIdle)
				continue
			}
		}
		w.out <- w.run(f)
		idle.Reset(hostWorkerIdle)
	}
}

// spinCall checks for w's next call for up to hostWorkerSpin, yielding
// between checks; nil when none came. loop calls it only with at least
// hostSpinProcs Ps: the driver's thread needs an idle P to enter Go, and a
// worker spinning on the last one would make the thread wait for it (a
// wake-up again), while a goroutine that submits host functions holds
// another.
func (w *hostWorker) spinCall() func() {
	w.spinning.Store(true)
	defer w.spinning.Store(false)
	start := time.Now()
	for {
		select {
		case f := <-w.in:
			hostStats.warm.Add(1)
			return f
		default:
		}
		if time.Since(start) > hostWorkerSpin {
			return nil
		}
		runtime.Gosched()
	}
}

// run runs f and returns how it ended. When f calls runtime.Goexit, the
// result is sent from here, and the worker ends.
func (w *hostWorker) run(f func()) (r hostResult) {
	returned := false
	defer func() {
		if returned {
			return
		}
		if p := recover(); p != nil {
			r = hostResult{err: &HostFuncError{Panic: p, Stack: debug.Stack()}}
			return
		}
		w.out <- hostResult{err: &HostFuncError{Goexit: true}, exited: true} // the goroutine ends after this
	}()
	f()
	returned = true
	return hostResult{}
}

// HostFuncError is the error of a host function that panicked or called
// runtime.Goexit (as t.Fatal does). It matches ErrHostFunc.
type HostFuncError struct {
	Panic  any    // the value the function panicked with
	Goexit bool   // the function called runtime.Goexit
	Stack  []byte // the goroutine's stack at the panic
}

func (e *HostFuncError) Error() string {
	if e.Goexit {
		return "cuda: a host function called runtime.Goexit"
	}
	return fmt.Sprintf("cuda: a host function panicked: %v", e.Panic)
}

// Is makes errors.Is(err, ErrHostFunc) hold.
func (e *HostFuncError) Is(target error) bool { return target == ErrHostFunc }

// hostFailed keeps the first failure of a host function of the stream for
// its next Sync; a later one, or one after the stream was closed, is
// logged. It never takes st.mu: a Sync that holds it may be waiting for
// the very host function that calls this.
func (st *streamState) hostFailed(err error) {
	st.hostMu.Lock()
	kept := !st.hostClosed && st.hostErr == nil
	if kept {
		st.hostErr = err
	}
	st.hostMu.Unlock()
	if !kept {
		logHostErr(err)
	}
}

// takeHostErr returns the failure kept for Sync, and forgets it.
func (st *streamState) takeHostErr() error {
	st.hostMu.Lock()
	defer st.hostMu.Unlock()
	err := st.hostErr
	st.hostErr = nil
	return err
}

// closeHostErr marks the stream closed for failures of its host
// functions: they are logged from now on, and so is one that no Sync
// reported.
func (st *streamState) closeHostErr() {
	st.hostMu.Lock()
	err := st.hostErr
	st.hostErr, st.hostClosed = nil, true
	st.hostMu.Unlock()
	if err != nil {
		logHostErr(err)
	}
}

func logHostErr(err error) {
	var he *HostFuncError
	if errors.As(err, &he) && he.Stack != nil {
		slog.Error("cuda: a host function failed and no Stream.Sync reported it", "err", err, "stack", string(he.Stack))
		return
	}
	logErr("a host function failed and no Stream.Sync reported it", err)
}

// HostFuncsPending is the number of host functions submitted whose entry
// is still in the table: not yet run, or captured into a graph that still
// exists.
func HostFuncsPending() int {
	return int(hostPending.Load())
}

// HostFunc makes f run once the work submitted to the stream so far has
// finished; the stream's later work waits for it to return
// (cuLaunchHostFunc). f runs on a goroutine of package cuda's, which the
// driver's thread waits for. f must not call the CUDA driver (through
// package cuda or otherwise) and should be short. Inside a Capture, f
// becomes a node of the graph and runs at each of its launches.
//
// On Linux (amd64, arm64) the driver's thread does not enter Go at all: it
// hands the call to one goroutine, the dispatcher, and waits for it. The
// host functions of all streams then run one after another, as CUDA
// allows for those of independent streams, except that calls the driver
// makes at the same moment from several threads run side by side; so a
// host function that waits for another stream's host function may wait
// for ever, as it may in C. Elsewhere the driver's thread enters Go and
// hands f to one of a few goroutines that end when idle for a while.
//
// A panic in f, or a runtime.Goexit (t.Fatal in a test), ends f only (a
// Goexit ends the goroutine f ran on, which is replaced): the stream goes
// on, and the stream's next Sync returns the failure (a *HostFuncError
// matching ErrHostFunc), once. A failure that no Sync can report is
// logged at level Error instead: the second of them before a Sync, one
// after the stream's Close, and one of a host function captured into a
// graph.
//
// Any number of host functions can be submitted over the program's life:
// they share one callback.
//
// The hand-off costs the stream's timeline little while host functions
// come back to back: the dispatcher checks for the next call for about
// 50µs after each one, and the driver's thread checks for the result
// before it sleeps (both only when GOMAXPROCS is 4 or more). After an
// idle spell a call wakes the dispatcher, an OS thread wake-up.
func (s *Stream) HostFunc(f func()) error { return s.hostFunc("HostFunc", f, false) }

// HostFuncOnDriverThread is HostFunc for a function that runs on the
// driver's own thread, as a C program's host function does (its callback
// thread, which the stream's later work waits for), instead of being
// handed to a goroutine of package cuda's: no other thread is woken for
// it, so a host function costs the stream's timeline what it costs in C
// plus the entry into Go (HostFunc's hand-off costs an OS thread wake-up
// each time the dispatcher has gone idle: tens of µs on an idle server).
// For short functions in a graph launched in a loop, say.
//
// The guarantee kept: a panic in f is recovered on the driver's thread and
// reported as HostFunc's are (the next Sync returns it, once, as a
// *HostFuncError; one that no Sync can report is logged), and the stream
// goes on. f must not call runtime.Goexit, which t.Fatal, t.FailNow and
// t.SkipNow do: no deferred call can stop a Goexit, and on a thread that
// the Go runtime did not create the runtime then ends the process (after
// a log line that says so). Use HostFunc for a function that may. f must
// not call the CUDA driver, and should be short: while it runs, the
// driver's thread runs no other host function.
//
// On Linux (amd64, arm64) the driver's thread keeps the Go runtime's M
// that it first entered Go on until it exits, so that later entries cost
// no system calls: package cuda makes the runtime's pthread key for it
// when the first host function is submitted, which does the same for any
// thread that calls into Go from C from then on (as in a cgo program with
// exported functions). PURECUDA_BIND_DRIVER_THREADS=0 in the environment
// leaves it out: every entry then borrows an M and gives it back.
func (s *Stream) HostFuncOnDriverThread(f func()) error {
	return s.hostFunc("HostFuncOnDriverThread", f, true)
}

// hostFunc submits f for HostFunc (op) or, direct, HostFuncOnDriverThread.
func (s *Stream) hostFunc(op string, f func(), direct bool) error {
	if f == nil {
		return errors.New("cuda: Stream." + op + ": nil function")
	}
	st, err := s.acquire(op)
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	hostFuncs.once.Do(func() { hostFuncs.trampoline = newHostCallback() })
	capturing, err := sync.Capturing(st.raw)
	if err != nil {
		return fmt.Errorf("cuda: Stream.%s: %w", op, dl.Failed("", "cuStreamIsCapturing", err))
	}
	var failed *streamState // where a failure is reported: none for a captured function
	if !capturing {
		failed = st
	}
	hostFuncs.mu.Lock()
	e := takeHostEntry(f, failed, capturing, direct)
	fn := hostFuncs.trampoline
	if e.queued { // read under the lock: the driver may run e's function as soon as it is submitted
		fn = hostQueueCallback()
	}
	hostFuncs.mu.Unlock()
	if err := launchHostFunc(st, fn, e); err != nil {
		giveBackHostEntry(e)
		return driverErr("cuLaunchHostFunc", err)
	}
	if capturing {
		// The entry lives as long as the graph.
		if !graph.Lease(st.raw, func() { giveBackHostEntry(e) }) {
			return errors.New("cuda: Stream." + op + ": the stream is captured outside package graph: the function is kept for the life of the program")
		}
	}
	return nil
}

// launchHostFunc submits e's function to st's stream, with st's context
// current.
func launchHostFunc(st *streamState, fn uintptr, e *hostEntry) (err error) {
	prev, err := st.ctx.enter()
	if err != nil {
		return err
	}
	err = libcuda.LaunchHostFunc(st.raw, libcuda.HostFn(fn), unsafe.Pointer(e))
	if lerr := st.ctx.leave(prev); lerr != nil {
		err = errors.Join(err, lerr)
	}
	return st.ctx.check(err)
}
