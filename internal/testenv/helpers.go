package testenv

import (
	"context"
	"log/slog"
	"runtime"
	gosync "sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/libcuda"
)

// Gate holds streams until the test opens it: a word of pinned, mapped host
// memory that cuStreamWaitValue32 waits on. It is the deterministic way to
// keep a stream busy, on the simulator and on the GPU.
type Gate struct {
	host  unsafe.Pointer
	dev   libcuda.Deviceptr
	freed bool // held.mu; its memory is freed
}

// NewGate allocates a gate; the calling thread must have a context current.
// The gate is opened and freed when the test ends.
func NewGate(t testing.TB) *Gate {
	t.Helper()
	g := &Gate{}
	Must(t, libcuda.MemHostAlloc(&g.host, 64, uint32(libcuda.CU_MEMHOSTALLOC_DEVICEMAP|libcuda.CU_MEMHOSTALLOC_PORTABLE)))
	atomic.StoreUint32((*uint32)(g.host), 0)
	Must(t, libcuda.MemHostGetDevicePointer(&g.dev, g.host, 0))
	t.Cleanup(func() {
		g.Open()
		held.mu.Lock()
		g.freed = true // openHeld must not write to it any more
		held.mu.Unlock()
		if err := libcuda.MemFreeHost(g.host); err != nil {
			t.Errorf("cuMemFreeHost: %v", err)
		}
	})
	return g
}

// Hold makes s wait until the gate opens. If the test fails meanwhile, the
// gate opens before the cleanups registered so far run (they may wait for
// s, as cuMemFree does), and before those registered later with Fenced.
func (g *Gate) Hold(t testing.TB, s libcuda.Stream) {
	t.Helper()
	if BeforeHold != nil && !anyHeldClosed() {
		BeforeHold()
	}
	Must(t, libcuda.StreamWaitValue32(s, g.dev, 1, uint32(libcuda.CU_STREAM_WAIT_VALUE_GEQ)))
	held.mu.Lock()
	if held.m == nil {
		held.m = map[testing.TB][]*Gate{}
	}
	first := len(held.m[t]) == 0
	held.m[t] = append(held.m[t], g)
	held.mu.Unlock()
	if first {
		t.Cleanup(func() { openHeld(t) })
	}
	t.Cleanup(g.Open)
}

// BeforeHold, when set, runs in Hold before the stream is held, unless a
// stream is held already by a gate still closed. The tests of packages that
// use hostmem set it to hostmem.Trim: a background unregister waits for
// every stream, a held one too, and the driver calls of other threads wait
// for that unregister, so one that starts before the hold and reaches the
// driver after it deadlocks a test whose next driver call comes before its
// gate opens. Trim ends the batch in flight and every retired
// registration first. (testenv cannot import hostmem: hostmem's own tests
// import testenv.)
var BeforeHold func()

// anyHeldClosed says whether a gate of some test holds a stream and is
// still closed: then BeforeHold, which waits for the device, would wait for
// that gate.
func anyHeldClosed() bool {
	held.mu.Lock()
	defer held.mu.Unlock()
	for _, gates := range held.m {
		for _, g := range gates {
			if !g.freed && atomic.LoadUint32((*uint32)(g.host)) == 0 {
				return true
			}
		}
	}
	return false
}

// held lists, for each test, the gates it holds streams with.
var held struct {
	mu gosync.Mutex
	m  map[testing.TB][]*Gate
}

// openHeld opens every gate that t has held a stream with.
func openHeld(t testing.TB) {
	held.mu.Lock()
	defer held.mu.Unlock()
	for _, g := range held.m[t] {
		if !g.freed {
			g.Open()
		}
	}
	delete(held.m, t)
}

// Fenced registers f as a cleanup of t that first opens the gates t holds
// streams with, whenever they were held: for cleanups that wait for the
// device (cuMemFree, cuMemFreeHost, cuMemHostUnregister and cuCtxDestroy
// wait for all work in flight), which t.Cleanup's last-in-first-out order
// would otherwise run, when the test fails before opening its gate, while
// a gate held after f's registration still holds a stream: a deadlock
// instead of a failure.
func Fenced(t testing.TB, f func()) {
	t.Cleanup(func() {
		openHeld(t)
		f()
	})
}

// Dev is the gate's word as the device sees it, for stream memory
// operations of the test's own.
func (g *Gate) Dev() libcuda.Deviceptr { return g.dev }

// Host is the gate's word in host memory; it reads 1 once the gate is open.
func (g *Gate) Host() unsafe.Pointer { return g.host }

// Open lets every stream held by the gate go on.
func (g *Gate) Open() { atomic.StoreUint32((*uint32)(g.host), 1) }

// NewStream creates a non-blocking stream destroyed when the test ends; the
// calling thread must have a context current.
func NewStream(t testing.TB) libcuda.Stream {
	t.Helper()
	var s libcuda.Stream
	Must(t, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	t.Cleanup(func() {
		if err := libcuda.StreamDestroy(s); err != nil {
			t.Errorf("cuStreamDestroy: %v", err)
		}
	})
	return s
}

// LoadKernels loads the test kernels (internal/kernels) into the current
// context until the test ends.
func LoadKernels(t testing.TB) libcuda.Module {
	t.Helper()
	m, err := libcuda.LoadModule(kernels.PTX)
	if err != nil {
		t.Fatalf("loading the test kernels: %v", err)
	}
	t.Cleanup(func() {
		if err := libcuda.ModuleUnload(m); err != nil {
			t.Errorf("cuModuleUnload: %v", err)
		}
	})
	return m
}

// Kernel looks up a function of m.
func Kernel(t testing.TB, m libcuda.Module, name string) libcuda.Func {
	t.Helper()
	f, err := m.Function(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// OSThread is a goroutine locked to its own OS thread, with a context
// current, that runs functions on request: "another thread" in the driver's
// sense.
type OSThread struct {
	t    testing.TB
	work chan func()
}

// NewOSThread starts a thread with cu current; it ends with the test.
func NewOSThread(t testing.TB, cu libcuda.Context) *OSThread {
	t.Helper()
	th := &OSThread{t: t, work: make(chan func())}
	ready := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ready <- libcuda.CtxSetCurrent(cu)
		for f := range th.work {
			f()
		}
	}()
	Must(t, Recv(t, ready, "the OS thread to start"))
	t.Cleanup(func() { close(th.work) })
	return th
}

// Do runs f on the thread and waits for it, at most Timeout. When f stops
// its goroutine (a Must or t.Fatal in f), the test stops here.
func (th *OSThread) Do(f func()) {
	th.t.Helper()
	done := make(chan bool, 1)
	th.work <- func() {
		finished := false
		defer func() { done <- finished }()
		f()
		finished = true
	}
	if !Recv(th.t, done, "a function on another OS thread") {
		th.t.FailNow()
	}
}

// WithMode runs f with the calling thread's capture mode set to mode and
// restores the previous mode after. It may run on any goroutine.
func WithMode(t testing.TB, mode libcuda.StreamCaptureMode, f func()) {
	t.Helper()
	old := mode
	if err := libcuda.ThreadExchangeStreamCaptureMode(&old); err != nil {
		t.Errorf("cuThreadExchangeStreamCaptureMode: %v", err)
		return
	}
	defer func() {
		if err := libcuda.ThreadExchangeStreamCaptureMode(&old); err != nil {
			t.Errorf("cuThreadExchangeStreamCaptureMode (restore): %v", err)
		}
	}()
	f()
}

// ErrorLog records what is logged at level Error while a test runs.
type ErrorLog struct {
	mu   gosync.Mutex
	msgs []string
}

// Enabled implements slog.Handler.
func (h *ErrorLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }

// Handle implements slog.Handler.
func (h *ErrorLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	h.msgs = append(h.msgs, msg)
	return nil
}

// WithAttrs implements slog.Handler.
func (h *ErrorLog) WithAttrs([]slog.Attr) slog.Handler { return h }

// WithGroup implements slog.Handler.
func (h *ErrorLog) WithGroup(string) slog.Handler { return h }

// Messages returns what was logged so far.
func (h *ErrorLog) Messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.msgs...)
}

// CaptureErrors makes slog's default logger record errors for the rest of
// the test and returns the record.
func CaptureErrors(t testing.TB) *ErrorLog {
	h := &ErrorLog{}
	old := slog.Default()
	slog.SetDefault(slog.New(h))
	t.Cleanup(func() { slog.SetDefault(old) })
	return h
}

// NoErrorsLogged fails the test, at its end, if anything was logged at
// level Error.
func NoErrorsLogged(t testing.TB) {
	h := CaptureErrors(t)
	t.Cleanup(func() {
		for _, m := range h.Messages() {
			t.Errorf("logged at error level: %s", m)
		}
	})
}

// AllocsPerRunMin is the least of three testing.AllocsPerRun(runs, f):
// AllocsPerRun counts the whole process's allocations, so a background
// goroutine (a runtime cleanup of an earlier test's value, a poller) can
// add to one measurement; an allocation of f's own shows in all three.
func AllocsPerRunMin(runs int, f func()) float64 {
	least := testing.AllocsPerRun(runs, f)
	for range 2 {
		least = min(least, testing.AllocsPerRun(runs, f))
	}
	return least
}
