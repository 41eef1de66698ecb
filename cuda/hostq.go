//go:build linux && (amd64 || arm64)

package cuda

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// HostFunc's functions reach Go without the driver's thread entering Go.
// The driver calls hostQueueCallback (hostq_amd64.s, hostq_arm64.s), which
// puts a record of the call on its own stack, pushes the record onto
// hostQHead (a lock-free stack of the calls not yet taken), wakes the
// dispatcher through the futex hostQSeq if the dispatcher sleeps on it,
// and waits for the record's state to say the function has run: it
// checks hostQSpin times, then sleeps on the state as a futex. The
// dispatcher, a goroutine of this package's, takes the posted records,
// runs each one's function and sets its state, waking the driver's thread
// if it went to sleep.
//
// So a host function costs no needm/dropm (the runtime's borrowing of an M
// for a thread it did not create, and giving it back: a dozen system calls
// each time) and allocates nothing. While calls come back to back, neither
// side sleeps: the dispatcher checks for the next call for hostWorkerSpin
// after each one, and the driver's thread checks for its result before it
// sleeps; both only with Ps to spare (hostSpinProcs).
//
// Every driver thread has at most one record posted, since it waits for
// it: the records taken together come from different threads, and are
// not ordered. The dispatcher runs the first itself and hands the others
// to host workers, so that host functions that the driver calls at the
// same time from several threads run at the same time, as before.
var (
	hostQHead     uintptr // the newest record posted and not yet taken; 0 when none
	hostQSeq      uint32  // bumped by every post: the dispatcher's futex
	hostQSleeping uint32  // 1 while the dispatcher sleeps on hostQSeq, or is about to
	hostQSpin     uint32  // checks of the record's state before the driver's thread sleeps

	// Counters, written by the callback: records posted, posts that woke
	// the dispatcher, records whose thread slept for the result, and of
	// those the ones that had woken the dispatcher.
	hostQPosted, hostQWakes, hostQSlept, hostQWakeSlept uint64
)

// hostQSpinFor is how long the dispatcher checks for the next post
// before it sleeps (hostWorkerSpin; tests make it longer); hostQSpinning
// says that it is checking.
var (
	hostQSpinFor  atomic.Int64
	hostQSpinning atomic.Bool
)

func init() { hostQSpinFor.Store(int64(hostWorkerSpin)) }

// hostQueueCallbackABI0 is the address of hostQueueCallback.
var hostQueueCallbackABI0 uintptr

// Implemented in assembly: the fields of a record, and its completion.
// hostQDone sets the record's state to done and reports whether the
// driver's thread sleeps on it; rec must not be used after it.
func hostQEntry(rec uintptr) *hostEntry
func hostQNext(rec uintptr) uintptr
func hostQDone(rec uintptr) (slept bool)

// hostQueueing reports whether HostFunc goes through the queue here.
const hostQueueing = true

// hostQueueCallback returns the C-callable function of HostFunc.
func hostQueueCallback() uintptr { return hostQueueCallbackABI0 }

// startHostDispatcher starts the dispatcher unless it runs; hostFuncs.mu
// is held. It runs while any entry submitted through the queue is in use
// (hostQueued): only then can the driver post a record.
func startHostDispatcher() {
	if !hostFuncs.dispatching {
		hostFuncs.dispatching = true
		setHostSpin()
		go hostDispatch()
	}
}

// setHostSpin sets how long the driver's thread checks for its result
// before it sleeps: about hostCallerSpin with Ps to spare, else not at
// all (a thread that spins on the machine's last core would keep the
// dispatcher from running).
func setHostSpin() {
	n := uint32(0)
	if runtime.GOMAXPROCS(0) >= hostSpinProcs {
		n = hostDriverChecks
	}
	atomic.StoreUint32(&hostQSpin, n)
}

// hostDriverChecks is the number of checks of its result the driver's
// thread makes before it sleeps, each after a pause instruction (tens of
// ns): tens of µs, the time a sleeping dispatcher may take to wake.
const hostDriverChecks = 1000

// hostDispatch takes the posted records and runs their functions until
// no entry is in use and none was posted for hostWorkerIdle. A function
// that calls runtime.Goexit ends the goroutine it runs on: runRecord then
// starts another dispatcher.
func hostDispatch() {
	spin := atomic.LoadUint32(&hostQSpin) > 0
	woken := false // the last wait for a post slept
	for {
		list := atomic.SwapUintptr(&hostQHead, 0)
		if list == 0 {
			var exit bool
			if exit, woken = hostWaitPost(spin); exit {
				return
			}
			spin = atomic.LoadUint32(&hostQSpin) > 0
			continue
		}
		for rest := hostQNext(list); rest != 0; {
			next := hostQNext(rest)
			hostStats.calls.Add(1)
			hostStats.batched.Add(1)
			go runRecord(rest, false)
			rest = next
		}
		hostStats.calls.Add(1)
		if !woken {
			hostStats.warm.Add(1)
		}
		if !runRecord(list, true) {
			return // Goexit: another dispatcher runs
		}
		woken = false
	}
}

// hostWaitPost waits for a post: it checks hostQHead for up to
// hostWorkerSpin when spin is set, then sleeps on hostQSeq for up to
// hostWorkerIdle. It reports whether the dispatcher is to end (idle, with
// no entry in use), and whether it slept.
func hostWaitPost(spin bool) (exit, slept bool) {
	if spin {
		hostQSpinning.Store(true)
		start := time.Now()
		for {
			for range 64 {
				if atomic.LoadUintptr(&hostQHead) != 0 {
					hostQSpinning.Store(false)
					return false, false
				}
			}
			if time.Since(start) > time.Duration(hostQSpinFor.Load()) {
				break
			}
			runtime.Gosched()
		}
		hostQSpinning.Store(false)
	}
	seq := atomic.LoadUint32(&hostQSeq)
	atomic.StoreUint32(&hostQSleeping, 1)
	timedOut := false
	if atomic.LoadUintptr(&hostQHead) == 0 {
		timedOut = futexWait(&hostQSeq, seq, hostWorkerIdle)
	}
	atomic.StoreUint32(&hostQSleeping, 0)
	if !timedOut {
		setHostSpin()
		return false, true
	}
	hostFuncs.mu.Lock()
	defer hostFuncs.mu.Unlock()
	if hostQueued.Load() > 0 || atomic.LoadUintptr(&hostQHead) != 0 {
		return false, true
	}
	hostFuncs.dispatching = false
	return true, true
}

// runRecord runs the function of record rec and completes the record. It
// reports whether the function returned or panicked (false: it called
// runtime.Goexit, and the goroutine ends after runRecord; if it was the
// dispatcher, another is started).
func runRecord(rec uintptr, dispatcher bool) (ok bool) {
	f, st, _, known := takeCall(hostQEntry(rec))
	if !known {
		hostQComplete(rec)
		return true
	}
	returned := false
	defer func() {
		if !returned {
			var err error
			if p := recover(); p != nil {
				err = &HostFuncError{Panic: p, Stack: debug.Stack()}
				ok = true
			} else {
				err = &HostFuncError{Goexit: true}
				if dispatcher {
					go hostDispatch()
				}
			}
			reportHostErr(st, err)
		}
		hostQComplete(rec)
	}()
	f()
	returned = true
	return true
}

// hostQComplete marks rec done, and wakes its driver thread if it sleeps.
func hostQComplete(rec uintptr) {
	if hostQDone(rec) {
		futexWake(rec + 16)
	}
}

// futexWait sleeps while *addr == val, for up to d; it reports whether it
// timed out. A wake-up, a changed value or a signal end it early.
func futexWait(addr *uint32, val uint32, d time.Duration) (timedOut bool) {
	ts := syscall.NsecToTimespec(int64(d))
	_, _, errno := syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitPrivate, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
	return errno == syscall.ETIMEDOUT
}

// futexWake wakes a thread that sleeps on the futex at addr, which is
// not Go memory (a record on a driver thread's stack). The thread may
// have left already: a spurious wake-up of whatever sleeps there later
// is harmless, since every futex sleeper checks its condition again.
func futexWake(addr uintptr) {
	syscall.RawSyscall6(syscall.SYS_FUTEX, addr, futexWakePrivate, 1, 0, 0, 0)
}

const (
	futexWaitPrivate = 128
	futexWakePrivate = 129
)

// hostQCounts reads the callback's counters: records posted, posts that
// woke the dispatcher, records whose driver thread slept for the result,
// and of those the ones that had woken the dispatcher.
func hostQCounts() (posted, wakes, slept, wakeSlept uint64) {
	return atomic.LoadUint64(&hostQPosted), atomic.LoadUint64(&hostQWakes), atomic.LoadUint64(&hostQSlept), atomic.LoadUint64(&hostQWakeSlept)
}
