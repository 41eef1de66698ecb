package cuda

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Debug is a debugging mode of package cuda, set by SetDebug or by the
// environment variable PURECUDA_DEBUG when the program starts.
type Debug int32

const (
	// DebugOff is the default: launches return once submitted.
	DebugOff Debug = iota
	// DebugSync (PURECUDA_DEBUG=sync) makes every launch wait for its
	// kernel to finish, so that a kernel fault is reported by the launch
	// that caused it: its error is a *LostError with Exact set and that
	// one launch (kernel, shape, stream, its arguments' memory and values,
	// the caller's file:line). It is slow: each launch costs a wait for
	// the GPU, and streams no longer overlap with the host. A launch into
	// a stream being captured is not waited for (the wait would break the
	// capture); Stream.LaunchGraph and Stream.RunCached wait for the
	// graph's launch instead.
	DebugSync
)

var debugMode atomic.Int32

func init() {
	if os.Getenv("PURECUDA_DEBUG") == "sync" {
		debugMode.Store(int32(DebugSync))
	}
}

// SetDebug sets the debugging mode for the launches that start after it,
// and returns the mode before. Off, it costs a launch one atomic load.
func SetDebug(d Debug) (previous Debug) {
	// Each device's state has a copy, on the line its launches read.
	devStates.mu.Lock()
	defer devStates.mu.Unlock()
	previous = Debug(debugMode.Swap(int32(d)))
	for _, dv := range devStates.m {
		dv.debug.Store(int32(d))
	}
	return previous
}

// debugWait waits, in DebugSync mode, for the launch numbered n that
// launchArgs just submitted, unless the stream is being captured. A fault
// is reported against that launch: the error names it exactly.
//
// The driver is asked whether the stream is being captured only while
// captures are in progress (as Stream.Query does): a kernel that faults
// right away makes the error sticky before the launch returns, and a
// cuStreamIsCapturing made then would report the fault as its own failure,
// not naming the launch, where the wait below names it.
func (st *streamState) debugWait(f *Func, n uint64, d *[6]uint32, pc uintptr, args []Arg, addrs []uint64) error {
	if sync.CapturesInProgress() > 0 {
		var status libcuda.StreamCaptureStatus
		if err := libcuda.StreamIsCapturing(st.raw, &status); err != nil {
			return st.ctx.check(driverErr("cuStreamIsCapturing (debug mode)", err))
		}
		if status != libcuda.CU_STREAM_CAPTURE_STATUS_NONE {
			return nil
		}
	}
	err := sync.Stream(context.Background(), st.ctx.cu, st.raw)
	if err == nil {
		st.noteWaited(n)
		return nil
	}
	if st.ctx.dv.lost.Load() != nil || !errors.Is(err, ErrContextLost) {
		return st.ctx.checkOn(st, fmt.Errorf("cuda: waiting for launch #%d of %s (debug mode): %w", n, f.name, err))
	}
	info := LaunchInfo{Number: n, Kernel: f.name, Grid: dim3([3]uint32{d[0], d[1], d[2]}), Block: dim3([3]uint32{d[3], d[4], d[5]}), Stream: st.raw, PC: pc}
	info.Args = describeArgs(args, addrs)
	return st.ctx.dv.lose(st, fmt.Errorf("sync.Stream after the launch (debug mode): %w", err), &info)
}

// describeArgs says what each argument of a launch passed: memory by its
// device address and extent, values by size and bits.
func describeArgs(args []Arg, addrs []uint64) []string {
	out := make([]string, len(args))
	for i, a := range args {
		switch m := a.ref.(type) {
		case *allocHandle:
			out[i] = fmt.Sprintf("Slice at %#x: byte %d of an allocation of %d bytes at %#x", addrs[i], a.words[0], m.a().bytes, uint64(m.a().ptr))
		case bufferMem:
			out[i] = fmt.Sprintf("hostmem.Buffer at %#x, %d bytes", addrs[i], m.b.Size())
		case bigValue:
			out[i] = fmt.Sprintf("%d-byte value", a.size)
		case nil:
			out[i] = fmt.Sprintf("%d-byte value %#x", a.size, a.words[0])
		default:
			out[i] = fmt.Sprintf("memory at %#x", addrs[i])
		}
	}
	return out
}

// debugGraph waits, in DebugSync mode, for the graph just launched on the
// stream as launch n, unless the stream is being captured.
func (st *streamState) debugGraph(n uint64) error {
	if debugMode.Load() == int32(DebugOff) {
		return nil
	}
	var status libcuda.StreamCaptureStatus
	if err := libcuda.StreamIsCapturing(st.raw, &status); err != nil {
		return st.ctx.check(driverErr("cuStreamIsCapturing (debug mode)", err))
	}
	if status != libcuda.CU_STREAM_CAPTURE_STATUS_NONE {
		return nil
	}
	if err := sync.Stream(context.Background(), st.ctx.cu, st.raw); err != nil {
		return st.ctx.checkOn(st, fmt.Errorf("cuda: waiting for the graph launched on the stream as launch #%d (debug mode): %w", n, err))
	}
	st.noteWaited(n)
	return nil
}
