//go:build linux && (amd64 || arm64)

package dl

import (
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A pinned call runs a C function without the runtime's system-call
// bookkeeping: the goroutine stays running on its P (procPin keeps it
// there and off the scheduler) and the C code runs on a stack of that P's
// own, allocated here, instead of the M's system stack that runtime.cgocall
// switches to. What it saves is runtime.cgocall's entersyscall and
// exitsyscall (status changes, the P hand-off state, the scheduler's
// checks), which cost ~40 ns a call and, beside a driver call, evict more
// of the driver's code and data than the call itself needs.
//
// What it gives up is what entersyscall is for: while the C function
// runs, the goroutine holds its P, so the scheduler cannot hand the P to
// another thread and a stop-the-world (the GC's) waits for the call to
// return. The generators mark as pinned only entry points that return
// without waiting for the GPU (queries, the current context, capture
// state, enqueueing work: a launch, a record, a graph launch); see
// tools/gen's library table. The driver stalls even those while a
// device-wide fence runs on another thread (cuMemHostUnregister, cuMemFree
// and their kind: DESIGN.md's driver facts), so the wrappers of fences go
// through CallFence, which counts them: while one is in flight anywhere in
// the process, pinned calls take runtime.cgocall instead. Fences made
// outside the generated wrappers (another library's, C code's) are not
// seen.
//
// Calls that queue work on a stream (CallQueued) are pinned only when the
// program asks for it (SetPinnedQueued, PURECUDA_PINNED=queued): such a
// call finding the GPU's queue full waits for the GPU, and the GPU may be
// waiting for Go code (a host function, a stream waiting for a value the
// program writes), which a stop of the world held up by the pinned call
// would never let run.
//
// PURECUDA_PINNED=0 in the environment turns pinned calls off for the
// process: every call then goes through runtime.cgocall.

// procPin disables preemption of the calling goroutine and returns the id
// of its P; procUnpin undoes it. Both are part of the runtime's linkname
// contract (go.dev/issue/67401).
//
//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// pinnedCall switches the stack pointer to stack (the top of a C stack),
// calls fn with the C calling convention and the argument block in the
// first argument register, and switches back (pinned_amd64.s,
// pinned_arm64.s).
//
//go:noescape
func pinnedCall(fn uintptr, frame unsafe.Pointer, stack uintptr)

// maxPinnedProcs bounds the P ids that get a stack; a P beyond it (a
// GOMAXPROCS above 1024) makes its calls through runtime.cgocall.
const maxPinnedProcs = 1024

// pinnedStackSize is the C stack of each P: what the system stack of a
// thread gives C code is several MiB; the driver's calls marked pinned
// need far less, and the pages are committed only when touched. A guard
// page below it turns an overflow into a fault instead of a write into
// whatever lies beneath.
const (
	pinnedStackSize = 1 << 20
	guardSize       = 64 << 10
)

var (
	// stacks holds the top of each P's C stack: 0 before it is made,
	// noStack when making it failed (that P calls through cgocall).
	stacks [maxPinnedProcs]uintptr
	// queuedPinned: CallQueued makes pinned calls.
	queuedPinned atomic.Bool
	// unpinned counts what sends pinned calls through runtime.cgocall:
	// fences in flight, plus offBias while pinned calls are turned off.
	unpinned atomic.Int32
	stackMu  sync.Mutex
	// stackMem keeps the mappings referenced (they are never unmapped:
	// one per P that made a pinned call).
	stackMem [][]byte
)

const (
	noStack = 1
	offBias = 1 << 24
)

func init() {
	switch os.Getenv("PURECUDA_PINNED") {
	case "0":
		unpinned.Add(offBias)
	case "queued":
		queuedPinned.Store(true)
	}
}

// CallPinned runs the C function that f describes, as Call does, as a
// pinned call (see above) when it can: with pinned calls on, no fence in
// flight, and a C stack for the calling goroutine's P. It is for functions
// that return without waiting and never call back into Go.
//
//go:nosplit
func CallPinned(f *Frame) {
	if unpinned.Load() == 0 {
		p := procPin()
		var top uintptr
		if uint(p) < maxPinnedProcs {
			top = atomic.LoadUintptr(&stacks[p])
		}
		if top > noStack {
			pinnedCall(trampolineABI0, unsafe.Pointer(f), top)
			procUnpin()
			return
		}
		procUnpin()
		if top == 0 && uint(p) < maxPinnedProcs {
			makeStack(p) // once a P: noStack, once its mapping failed, is final
		}
	}
	runtime_cgocall(trampolineABI0, unsafe.Pointer(f))
}

// CallQueued runs the C function that f describes as CallPinned does
// where calls that queue work are pinned (SetPinnedQueued), else as Call
// does.
//
//go:nosplit
func CallQueued(f *Frame) {
	if queuedPinned.Load() {
		CallPinned(f)
		return
	}
	runtime_cgocall(trampolineABI0, unsafe.Pointer(f))
}

// SetPinnedQueued makes CallQueued's calls pinned (on) or not, and
// reports whether they were.
func SetPinnedQueued(on bool) (was bool) { return queuedPinned.Swap(on) }

// CallFence runs the C function that f describes through runtime.cgocall,
// counted as a fence in flight (see above) for its duration.
//
//go:nosplit
func CallFence(f *Frame) {
	unpinned.Add(1)
	runtime_cgocall(trampolineABI0, unsafe.Pointer(f))
	unpinned.Add(-1)
}

// SetPinned turns pinned calls on or off for the process and reports
// whether they were on (fences aside); for benchmarks and tests that
// compare the two paths.
func SetPinned(on bool) (was bool) {
	stackMu.Lock()
	defer stackMu.Unlock()
	was = unpinned.Load() < offBias
	switch {
	case on && !was:
		unpinned.Add(-offBias)
	case !on && was:
		unpinned.Add(offBias)
	}
	return was
}

// FencesInFlight reports how many fences are in flight; for tests.
func FencesInFlight() int { return int(unpinned.Load() % offBias) }

// PinnedStacks reports how many Ps have a C stack for pinned calls; for
// tests.
func PinnedStacks() int {
	stackMu.Lock()
	defer stackMu.Unlock()
	return len(stackMem)
}

// OnPinnedStack reports whether addr lies in one of the C stacks of pinned
// calls; for tests.
func OnPinnedStack(addr uintptr) bool {
	stackMu.Lock()
	defer stackMu.Unlock()
	for _, m := range stackMem {
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
		if addr >= lo && addr < lo+uintptr(len(m)) {
			return true
		}
	}
	return false
}

// makeStack maps the C stack of P p, the first time a pinned call finds
// none (that call goes through runtime.cgocall). A failed mapping is
// remembered: p's pinned calls take runtime.cgocall from then on.
func makeStack(p int) {
	stackMu.Lock()
	defer stackMu.Unlock()
	if atomic.LoadUintptr(&stacks[p]) != 0 {
		return
	}
	mem, err := unix.Mmap(-1, 0, guardSize+pinnedStackSize, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE|unix.MAP_STACK)
	if err == nil {
		if err = unix.Mprotect(mem[:guardSize], unix.PROT_NONE); err != nil {
			_ = unix.Munmap(mem)
		}
	}
	if err != nil {
		atomic.StoreUintptr(&stacks[p], noStack)
		return
	}
	stackMem = append(stackMem, mem)
	// The top, 64-byte aligned: the mapping's end is page aligned.
	top := uintptr(unsafe.Pointer(unsafe.SliceData(mem))) + uintptr(len(mem))
	atomic.StoreUintptr(&stacks[p], top)
}
