package cuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	gosync "sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/purecuda/purecuda/libcuda"
)

// ErrContextLost is matched (errors.Is) by the error of every call in a
// context that a kernel fault (an illegal address, a trap, a failed
// assert, a launch failure: the sticky Results, see
// libcuda.Result.ContextLost) has lost. The error is a *LostError, which
// names the first failure and the launches that may have caused it.
//
// Nothing on that device works again in this process: the driver answers
// every call in the context with the same error, and a reset of the
// primary context succeeds but the next retain fails with it. The process must be restarted to use
// the device again. Package cuda does not try: from the first failure on,
// every call through it on the device's contexts (and Device.Context,
// Devices) returns the same *LostError at once, without calling the
// driver; memory and registrations are kept as they are.
//
// It is libcuda.ErrContextLost, so errors of packages sync, graph and
// hostmem match it too.
var ErrContextLost = libcuda.ErrContextLost

// LostError is the error of a call in a lost context (see ErrContextLost):
// the first failure, with the launches that may have caused it.
type LostError struct {
	// Device is the ordinal of the device whose context was lost.
	Device int
	// Launches are the launches that may have faulted, newest first: in
	// debug mode (SetDebug) the one launch whose wait found the fault
	// (Exact); otherwise the launches on the stream whose wait reported
	// the fault since that stream's last completed wait (Stream.Sync, a
	// copy into a Go slice), or, when the report is not one stream's or
	// that stream has none, the launches on every stream since each
	// stream's last completed wait (and since the last Context.Sync). The
	// history keeps a device's last 64 launches (PURECUDA_LAUNCH_HISTORY
	// sets another number at the start).
	Launches []LaunchInfo
	// Exact is set in debug mode: Launches[0] is the launch that faulted.
	Exact bool
	// OneStream is set when Launches are those of the stream whose wait
	// reported the fault.
	OneStream bool

	err      error                  // the first failure, as its call returned it
	call     atomic.Pointer[string] // the driver call, when err does not name it
	nameable atomic.Bool            // err is a bare Result, and no call returned e at once yet
}

// Error names the device, the first failure and the candidate launches.
func (e *LostError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cuda: the context of device %d is lost (the process must be restarted to use the device): ", e.Device)
	if c := e.call.Load(); c != nil {
		b.WriteString(*c)
		b.WriteString(": ")
	}
	b.WriteString(strings.TrimPrefix(e.err.Error(), "cuda: "))
	switch {
	case e.Exact:
		b.WriteString("; the launch that faulted (debug mode): ")
	case len(e.Launches) == 0:
		b.WriteString("; no launch since the last completed waits")
		return b.String()
	case e.OneStream:
		b.WriteString("; launches on that stream since its last completed wait, newest first: ")
	default:
		b.WriteString("; launches since their streams' last completed waits, newest first: ")
	}
	for i, l := range e.Launches {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(l.String())
	}
	return b.String()
}

// Unwrap gives ErrContextLost and the first failure (which matches the
// driver's Result).
func (e *LostError) Unwrap() []error { return []error{ErrContextLost, e.err} }

// Result is the driver's sticky Result.
func (e *LostError) Result() libcuda.Result {
	var r libcuda.Result
	errors.As(e.err, &r)
	return r
}

// name records the driver call of a failure that was a bare Result: the
// call that found the fault names it (driverErr), unless a call has
// returned e at once before (see ctxState.lostErr), which made no driver
// call to name.
func (e *LostError) name(call string) {
	if e.nameable.CompareAndSwap(true, false) {
		e.call.Store(&call)
	}
}

// LaunchInfo is one launch of a device's launch history.
type LaunchInfo struct {
	// Number counts the device's launches through package cuda, from 1.
	Number uint64
	// Kernel is the kernel's name as Module.Func found it, or "(graph)"
	// for a graph's launch (Stream.LaunchGraph, Stream.RunCached), whose
	// Grid and Block are zero.
	Kernel      string
	Grid, Block Dim3
	// Stream is the stream's driver handle (the driver may have given it
	// to another stream since, once this one was closed).
	Stream libcuda.Stream
	// PC is the return address of the call to Launch, in its caller.
	PC uintptr
	// Args describes the arguments, in debug mode only.
	Args []string
}

// Caller is the Go code that called Launch: file, line and function.
func (l LaunchInfo) Caller() (file string, line int, function string) {
	if l.PC == 0 {
		return "", 0, ""
	}
	fr, _ := runtime.CallersFrames([]uintptr{l.PC}).Next()
	return fr.File, fr.Line, fr.Function
}

// String is the launch as the error prints it: number, kernel, shape,
// stream, arguments (debug mode) and caller.
func (l LaunchInfo) String() string {
	s := fmt.Sprintf("launch #%d of %s, grid %s, block %s, on stream %#x", l.Number, l.Kernel, l.Grid.text(), l.Block.text(), uintptr(l.Stream))
	if l.Kernel == graphFunc.name {
		s = fmt.Sprintf("launch #%d of a graph on stream %#x", l.Number, uintptr(l.Stream))
	}
	if l.Args != nil {
		s += " with (" + strings.Join(l.Args, ", ") + ")"
	}
	if file, line, fn := l.Caller(); file != "" {
		s += fmt.Sprintf(", called at %s:%d (%s)", file, line, fn)
	}
	return s
}

func (d Dim3) text() string {
	x, y, z, _ := d.dims()
	return fmt.Sprintf("(%d,%d,%d)", x, y, z)
}

// devState is what a device's contexts share for the whole process: a
// primary context lost once is lost for good, and the launch history
// spans every Context of the device.
type devState struct {
	// 64 bytes, one cache line, which every launch reads (and writes,
	// for its number).
	lost     atomic.Pointer[LostError]
	launches atomic.Uint64 // the launches numbered so far
	ring     []launchSlot  // a power of two long, or empty
	debug    atomic.Int32  // debugMode, for the launches on the device (SetDebug)
	ordinal  int32
	synced   atomic.Uint64 // launches up to this number are done (a Context.Sync returned)
	ringMu   gosync.Mutex  // orders the ring's writes and reads in race builds only
}

// launchSlot is one entry of the launch history, one cache line. A launch
// writes it with plain stores, without a lock, an atomic instruction or
// an allocation. A reader (the report of a fault) may meet an entry being
// written, or two launches a history's length apart writing one entry at
// once: a data race, which the Go memory model bounds for a location of a
// word or less (each field here, or each element of grid and block): a
// racing read sees the whole value of one write. So an entry read may mix
// two launches' fields, each pointer one that some launch wrote, and sum
// tells a mix apart: it is slotSum of the other fields, and a reader keeps
// only entries whose fields and sum agree. A mix that differs from the
// write whose sum it holds in one of the words slotSum multiplies never
// agrees (an odd constant maps different words to different products);
// one that differs in more agrees by chance, about once in 2^64.
//
// The race detector reports the race: in race builds a lock orders the
// writes and the reads instead (raceEnabled). No race-free way costs as
// little: sync/atomic's stores are locked instructions on amd64 (XCHG),
// and a seqlock, as the history had before, takes two of them and still
// reads the other fields racily.
//
// The entry points to its Func and stream weakly: the history must not keep
// a closed stream's state (whose final event holds the context, see
// Stream.Close) nor a Func (which holds its Module) from the collector, or
// the primary context would stay retained for good once a kernel ran. An
// entry whose Func or stream has been collected is left out of the
// candidates.
type launchSlot struct {
	seq    uint64 // the launch's number
	fn     weak.Pointer[Func]
	st     weak.Pointer[streamState]
	grid   [3]uint32
	block  [3]uint32
	callPC uintptr
	sum    uint64
}

// slotSum mixes an entry's fields into a checksum (see launchSlot): each
// word times its own odd constant, XORed, so that fields of two launches
// mixed do not give either's sum but by rare chance.
func slotSum(n uint64, fn *Func, st *streamState, grid, block [3]uint32, pc uintptr) uint64 {
	return n*0x9e3779b97f4a7c15 ^ uint64(uintptr(unsafe.Pointer(fn)))*0xbf58476d1ce4e5b9 ^
		uint64(uintptr(unsafe.Pointer(st)))*0x94d049bb133111eb ^ uint64(pc)*0xd6e8feb86659fd93 ^
		(uint64(grid[0])|uint64(grid[1])<<32)*0xa0761d6478bd642f ^
		(uint64(grid[2])|uint64(block[0])<<32)*0xe7037ed1a0b428db ^
		(uint64(block[1])|uint64(block[2])<<32)*0x8ebc6af09c88c6e3
}

var devStates struct {
	mu gosync.Mutex
	m  map[libcuda.Device]*devState
}

// stateOf returns the process's state of device d.
func stateOf(d Device) *devState {
	devStates.mu.Lock()
	defer devStates.mu.Unlock()
	if dv := devStates.m[d.dev]; dv != nil {
		return dv
	}
	if devStates.m == nil {
		devStates.m = map[libcuda.Device]*devState{}
	}
	dv := &devState{ordinal: int32(d.ordinal), ring: make([]launchSlot, historySize())}
	dv.debug.Store(debugMode.Load())
	devStates.m[d.dev] = dv
	return dv
}

// historySize is the length of a device's launch history: 64, or
// PURECUDA_LAUNCH_HISTORY rounded up to a power of two (0 keeps none).
func historySize() int {
	n := 64
	if v, err := strconv.Atoi(os.Getenv("PURECUDA_LAUNCH_HISTORY")); err == nil && v >= 0 && v <= 1<<16 {
		n = v
	}
	size := 0
	if n > 0 {
		size = 1
	}
	for size < n {
		size *= 2
	}
	return size
}

// record numbers a launch and writes it into the history.
func (dv *devState) record(f *Func, st *streamState, d *[6]uint32, pc uintptr) uint64 {
	n := dv.launches.Add(1)
	if len(dv.ring) == 0 {
		return n
	}
	if raceEnabled {
		dv.ringMu.Lock()
		defer dv.ringMu.Unlock()
	}
	s := &dv.ring[n&uint64(len(dv.ring)-1)]
	g, b := [3]uint32{d[0], d[1], d[2]}, [3]uint32{d[3], d[4], d[5]}
	s.seq, s.fn, s.st, s.grid, s.block, s.callPC = n, f.weakRef(), st.weakRef(), g, b, pc
	s.sum = slotSum(n, f, st, g, b, pc)
	return n
}

// graphFunc stands for a graph's launch in the history.
var graphFunc = newGraphFunc()

func newGraphFunc() *Func {
	f := &Func{name: "(graph)"}
	f.self = weak.Make(f)
	return f
}

// weakRef is the Func's weak pointer, made once when Module.Func made it.
func (f *Func) weakRef() weak.Pointer[Func] {
	if f.self != (weak.Pointer[Func]{}) {
		return f.self
	}
	return weak.Make(f)
}

// weakRef is the stream state's weak pointer, made once by NewStream.
func (st *streamState) weakRef() weak.Pointer[streamState] {
	if st.self != (weak.Pointer[streamState]{}) {
		return st.self
	}
	return weak.Make(st)
}

// recordGraph writes a graph's launch into the history.
func (st *streamState) recordGraph(pc uintptr) uint64 {
	var d [6]uint32
	return st.ctx.dv.record(graphFunc, st, &d, pc)
}

// candidates are the launches of the history not known to be done, newest
// first: on stream on only, or on every stream when on is nil.
func (dv *devState) candidates(on *streamState) []LaunchInfo {
	if raceEnabled {
		dv.ringMu.Lock()
		defer dv.ringMu.Unlock()
	}
	end, synced := dv.launches.Load(), dv.synced.Load()
	var out []LaunchInfo
	for n := end; n > synced && n+uint64(len(dv.ring)) > end; n-- {
		s := &dv.ring[n&uint64(len(dv.ring)-1)]
		seq, fn, st, g, b, pc, sum := s.seq, s.fn.Value(), s.st.Value(), s.grid, s.block, s.callPC, s.sum
		if seq != n || sum != slotSum(seq, fn, st, g, b, pc) || fn == nil || st == nil || n <= st.waited.Load() || (on != nil && st != on) {
			continue
		}
		out = append(out, LaunchInfo{Number: n, Kernel: fn.name, Grid: dim3(g), Block: dim3(b), Stream: st.raw, PC: pc})
	}
	return out
}

func dim3(d [3]uint32) Dim3 { return Dim3{int(d[0]), int(d[1]), int(d[2])} }

// lose remembers err, a failure that matched ErrContextLost, as the
// device's first one, unless there was one already, and returns the
// remembered one. exact, if set, is the launch that faulted (debug mode);
// else the candidates are taken from the history (see LostError).
func (dv *devState) lose(on *streamState, err error, exact *LaunchInfo) *LostError {
	if l := dv.lost.Load(); l != nil {
		return l
	}
	l := &LostError{Device: int(dv.ordinal), err: err}
	_, bare := err.(libcuda.Result)
	l.nameable.Store(bare)
	switch {
	case exact != nil:
		l.Launches, l.Exact = []LaunchInfo{*exact}, true
	case on != nil:
		l.Launches = dv.candidates(on)
		l.OneStream = len(l.Launches) > 0
	}
	if !l.Exact && !l.OneStream {
		l.Launches = dv.candidates(nil)
	}
	if !dv.lost.CompareAndSwap(nil, l) {
		return dv.lost.Load()
	}
	logErr(fmt.Sprintf("device %d lost (every later call on it fails)", dv.ordinal), l)
	return l
}

// check returns err, or the context's LostError when err says the context
// is lost (the first such failure is remembered: see ErrContextLost).
func (st *ctxState) check(err error) error { return st.checkOn(nil, err) }

// checkOn is check for a failure reported by a wait for stream on.
func (st *ctxState) checkOn(on *streamState, err error) error {
	if err == nil || !errors.Is(err, ErrContextLost) {
		return err
	}
	var l *LostError
	if errors.As(err, &l) {
		return err
	}
	return st.dv.lose(on, err, nil)
}

// lostErr is the context's remembered failure, or nil: the error of a
// call that does not call the driver because the context is lost.
func (st *ctxState) lostErr() error {
	if l := st.dv.lost.Load(); l != nil {
		l.nameable.Store(false)
		return l
	}
	return nil
}

// waited notes that the stream's launches numbered up to n are done.
func (st *streamState) noteWaited(n uint64) {
	for {
		w := st.waited.Load()
		if w >= n || st.waited.CompareAndSwap(w, n) {
			return
		}
	}
}

// noteSynced notes that the device's launches numbered up to n are done.
func (dv *devState) noteSynced(n uint64) {
	for {
		w := dv.synced.Load()
		if w >= n || dv.synced.CompareAndSwap(w, n) {
			return
		}
	}
}
