package cuda

import (
	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/libcuda"
)

// Graph is captured work (graph.Graph): Stream.Capture returns one;
// Instantiate makes an Exec of it; Destroy it when done. It is package
// graph's type under package cuda's name, so that a program written
// against cuda needs no other import for graphs.
type Graph = graph.Graph

// Exec is an executable graph (graph.Exec): launch it with
// Stream.LaunchGraph, change its parameters with Update from a graph of
// the same shape, Destroy it when done.
type Exec = graph.Exec

// Cached is work captured once and run many times (graph.Cached), through
// Stream.RunCached: later runs update the executable graph in place when
// only parameters changed. Close it when done.
type Cached = graph.Cached

// NewCached returns a Cached that captures in the given mode
// (DefaultCaptureMode unless there is a reason for another).
func NewCached(mode CaptureMode) *Cached { return graph.NewCached(mode) }

// CaptureMode says which other calls a capture refuses while it is open
// (CUstreamCaptureMode): see CaptureGlobal, CaptureThreadLocal and
// CaptureRelaxed, and package graph's documentation.
type CaptureMode = libcuda.StreamCaptureMode

const (
	// CaptureGlobal: while the capture is open, potentially unsafe calls
	// (synchronizing, allocating, registering memory) made in global mode
	// by any thread of the process are refused and invalidate it.
	CaptureGlobal CaptureMode = libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL
	// CaptureThreadLocal: only such calls on the capturing thread are
	// refused. Package cuda runs the captured function on the capturing
	// goroutine, locked to its thread.
	CaptureThreadLocal CaptureMode = libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
	// CaptureRelaxed: no call is refused for the capture's sake, except
	// cuCtxSynchronize (Context.Sync), which every capture refuses.
	CaptureRelaxed CaptureMode = libcuda.CU_STREAM_CAPTURE_MODE_RELAXED
	// DefaultCaptureMode is the mode of Capture and RunCached without a
	// mode: thread-local (graph.DefaultMode).
	DefaultCaptureMode CaptureMode = graph.DefaultMode
)
