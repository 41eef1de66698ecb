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

	"github.com/ebitengine/purego"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Host functions go through one C-callable trampoline, made once: purego
// can make only a small fixed number of callbacks in a program's life.
// Each HostFunc puts its function in a table under a fresh entry whose
// address is the driver's user data; the trampoline looks the entry up,
// and an entry is removed when its function has run (or, for a function
// captured into a graph, when the graph is gone).
var hostFuncs struct {
	once       gosync.Once
	trampoline uintptr
	mu         gosync.Mutex
	table      map[uintptr]*hostEntry
}

type hostEntry struct {
	f    func()
	keep bool         // captured: runs at every launch of the graph
	st   *streamState // submitted outside a capture: where a failure is reported
}

// hostTrampoline is the one function the driver calls for every host
// function: user is the address of the function's table entry.
func hostTrampoline(user uintptr) uintptr {
	hostFuncs.mu.Lock()
	e := hostFuncs.table[user]
	if e != nil && !e.keep {
		delete(hostFuncs.table, user)
	}
	hostFuncs.mu.Unlock()
	if e == nil {
		slog.Error("cuda: the driver called a host function that is not in the table")
		return 0
	}
	if err := runHostFunc(e.f); err != nil {
		if e.st != nil {
			e.st.hostFailed(err)
		} else {
			logErr("a host function of a graph failed", err)
		}
	}
	return 0
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
// blocks (when GOMAXPROCS leaves Ps to spare: see spinCall). Both spins
// are bounded; the caller's does not yield, since
// the driver's thread holds its P while in Go and a yield would hand the P
// away and park the thread, the very wake-up the spin saves.
func runHostFunc(f func()) error {
	w := idleHostWorker()
	spinning := w.spinning.Load()
	hostStats.calls.Add(1)
	w.in <- f // w.in has room for one call: this never blocks
	var r hostResult
	if !spinning || !w.spinResult(&r) {
		r = <-w.out
	}
	if !r.exited {
		putHostWorker(w)
	}
	return r.err
}

// spinResult checks for w's result for up to hostCallerSpin without
// blocking; it reports whether the result came.
func (w *hostWorker) spinResult(r *hostResult) bool {
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
		if time.Since(start) > hostCallerSpin {
			return false
		}
	}
}

// hostWorkerIdle is how long a host worker waits for its next call
// before it ends; hostWorkerSpin, how long of that it checks for the call
// before it parks; hostCallerSpin, how long the driver's thread checks for
// a spinning worker's result before it blocks.
const hostWorkerIdle = 100 * time.Millisecond

const (
	hostSpinProcs  = 4
	hostWorkerSpin = 50 * time.Microsecond
	hostCallerSpin = 30 * time.Microsecond
)

// hostStats counts hand-offs, for tests: calls (all of them), warm (those
// that a spinning worker took without being woken) and unblocked (those
// whose caller had the result without blocking).
var hostStats struct {
	calls, warm, unblocked atomic.Uint64
}

// A hostWorker is a goroutine that runs host functions handed to it, one
// at a time.
type hostWorker struct {
	in       chan func()     // room for one call
	out      chan hostResult // room for one result
	spinning atomic.Bool     // checking for its next call instead of parked
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
	spin := runtime.GOMAXPROCS(0) >= hostSpinProcs
	for {
		var f func()
		if spin {
			f = w.spinCall()
		}
		if f == nil {
			select {
			case f = <-w.in:
				spin = runtime.GOMAXPROCS(0) >= hostSpinProcs
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
	hostFuncs.mu.Lock()
	defer hostFuncs.mu.Unlock()
	return len(hostFuncs.table)
}

// HostFunc makes f run once the work submitted to the stream so far has
// finished; the stream's later work waits for it to return
// (cuLaunchHostFunc). f runs on a goroutine of package cuda's (one of a
// few that run host functions one after another and end when idle for a
// while), which a driver thread waits for. f must not call the CUDA driver
// (through package cuda or otherwise) and should be short. Inside a
// Capture, f becomes a node of the graph and runs at each of its launches.
//
// A panic in f, or a runtime.Goexit (t.Fatal in a test), ends f only (a
// Goexit ends the goroutine f ran on, which is replaced): the stream goes on, and the stream's next Sync returns
// the failure (a *HostFuncError matching ErrHostFunc), once. A failure
// that no Sync can report is logged at level Error instead: the second of
// them before a Sync, one after the stream's Close, and one of a host
// function captured into a graph.
//
// Any number of host functions can be submitted over the program's life:
// they share one callback.
func (s *Stream) HostFunc(f func()) error {
	if f == nil {
		return errors.New("cuda: Stream.HostFunc: nil function")
	}
	st, err := s.acquire("HostFunc")
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	hostFuncs.once.Do(func() {
		hostFuncs.trampoline = purego.NewCallback(hostTrampoline)
		hostFuncs.table = make(map[uintptr]*hostEntry)
	})
	capturing, err := sync.Capturing(st.raw)
	if err != nil {
		return fmt.Errorf("cuda: Stream.HostFunc: cuStreamIsCapturing: %w", err)
	}
	e := &hostEntry{f: f, keep: capturing}
	if !capturing {
		e.st = st
	}
	key := uintptr(unsafe.Pointer(e))
	hostFuncs.mu.Lock()
	hostFuncs.table[key] = e
	hostFuncs.mu.Unlock()
	err = st.ctx.do(func() error {
		return libcuda.LaunchHostFunc(st.raw, libcuda.HostFn(hostFuncs.trampoline), unsafe.Pointer(e))
	})
	if err != nil {
		hostFuncs.mu.Lock()
		delete(hostFuncs.table, key)
		hostFuncs.mu.Unlock()
		return driverErr("cuLaunchHostFunc", err)
	}
	if capturing {
		// The entry lives as long as the graph.
		if !graph.Lease(st.raw, func() {
			hostFuncs.mu.Lock()
			delete(hostFuncs.table, key)
			hostFuncs.mu.Unlock()
		}) {
			return errors.New("cuda: Stream.HostFunc: the stream is captured outside package graph: the function is kept for the life of the program")
		}
	}
	return nil
}
