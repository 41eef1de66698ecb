//go:build linux

package sync

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The futex operations (linux/futex.h) on a word private to the process.
const (
	futexWaitPrivate = 0 | 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
	futexWakePrivate = 1 | 128 // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
	prGetTimerSlack  = 30      // PR_GET_TIMERSLACK
)

// sleeper is the shared poller's sleep between rounds: a futex wait with a
// timeout on word, on the poller's thread with its timer slack at 1ns for
// the sleep, so that a sleep of tens of microseconds lasts about that long
// (the runtime's timers wait in epoll_wait, in whole milliseconds). A
// kick ends the sleep early.
type sleeper struct {
	word *atomic.Uint32 // 0 while armed, 1 once kicked; heap memory, which does not move
}

func newSleeper() sleeper { return sleeper{word: new(atomic.Uint32)} }

// arm readies a sleep: a kick from now on ends it.
func (s sleeper) arm() { s.word.Store(0) }

// kick ends the armed sleep, at once or before it begins.
func (s sleeper) kick() {
	s.word.Store(1)
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(s.word)), futexWakePrivate, 1, 0, 0, 0)
}

// sleepingThread is the thread of the latest sleep (tests read its
// timer slack).
var sleepingThread atomic.Int64

// sleep sleeps for d, or until kicked. A signal may end it early, which
// costs only an early round.
func (s sleeper) sleep(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sleepingThread.Store(int64(unix.Gettid()))
	// The slack is the thread's, kept for its next user as it was.
	if old, err := unix.PrctlRetInt(prGetTimerSlack, 0, 0, 0, 0); err == nil && old != 1 {
		if unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0) == nil {
			defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0)
		}
	}
	ts := unix.NsecToTimespec(int64(d))
	if procs.Load() == 1 {
		unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(s.word)), futexWaitPrivate, 0, uintptr(unsafe.Pointer(&ts)), 0, 0)
		return
	}
	// With more than one processor the sleep keeps its processor, as a
	// goroutine that computes would: a sleep in a system call the runtime
	// knows of lets the runtime's monitor hand the processor to another
	// thread after 20µs, so each sleep of the poller woke an idle thread
	// (which found nothing to do) and the poller, once awake, had to get
	// a processor back before it could query (on the H200, 1,000 waiters
	// held 1.58 cores with the handed-off sleeps, 1.04 with the runtime's
	// timers). A signal (the runtime's preemption, a stop for the
	// collector) ends the futex wait early with EINTR, so the sleep never
	// holds up a stop for longer than the signal takes.
	unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(s.word)), futexWaitPrivate, 0, uintptr(unsafe.Pointer(&ts)), 0, 0)
}
