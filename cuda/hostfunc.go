package cuda

import (
	"errors"
	"fmt"
	"log/slog"
	gosync "sync"
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
	keep bool // captured: runs at every launch of the graph
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
	defer func() {
		// A panic must not unwind into the driver's thread.
		if r := recover(); r != nil {
			slog.Error("cuda: a host function panicked", "panic", fmt.Sprint(r))
		}
	}()
	e.f()
	return 0
}

// HostFuncsPending is the number of host functions submitted whose entry
// is still in the table: not yet run, or captured into a graph that still
// exists.
func HostFuncsPending() int {
	hostFuncs.mu.Lock()
	defer hostFuncs.mu.Unlock()
	return len(hostFuncs.table)
}

// HostFunc makes f run on a driver thread once the work submitted to the
// stream so far has finished; the stream's later work waits for it to
// return (cuLaunchHostFunc). f must not call the CUDA driver (through
// package cuda or otherwise) and should be short; a panic in f is
// recovered and logged. Inside a Capture, f becomes a node of the graph
// and runs at each of its launches.
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
