package cuda

import (
	"errors"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/libcuda"
)

// Capture captures the work that f submits to the stream into a graph
// instead of running it (graph.Capture, in graph.DefaultMode), and returns
// the graph; instantiate it (Graph.Instantiate) and launch the executable
// graph with LaunchGraph. f runs on the calling goroutine and receives the
// stream; other streams join the capture by waiting for an Event recorded
// on it. Memory used in the capture (Slices, pinned host memory, host
// functions) must outlive the graph's launches: Slices are not freed
// while a graph that uses them runs, only ordered after the streams'
// work.
//
// Alloc in f allocates in the graph (a mem-alloc node), and Free in f of
// such a Slice frees it there (a mem-free node): see Alloc, # Allocating
// in a capture.
//
// The stream cannot be closed during the capture (ErrCapturing), nor can
// another stream that joined it; the driver says which streams are being
// captured (cuStreamIsCapturing).
func (s *Stream) Capture(f func(s *Stream) error) (*Graph, error) {
	return s.CaptureMode(graph.DefaultMode, f)
}

// CaptureMode is Capture in the given capture mode (see CaptureMode).
func (s *Stream) CaptureMode(mode CaptureMode, f func(s *Stream) error) (*Graph, error) {
	if f == nil {
		return nil, errors.New("cuda: Stream.Capture: nil function")
	}
	st, err := s.acquire("Capture")
	if err != nil {
		return nil, err
	}
	st.inCapture.Add(1) // under the read lock: a Close after it sees it
	st.mu.RUnlock()
	defer st.inCapture.Add(-1)
	g, err := graph.Capture(st.raw, mode, func(libcuda.Stream) error { return f(s) })
	return g, st.ctx.check(err)
}

// LaunchGraph launches an executable graph on the stream (graph.Exec's
// Launch). The launch goes into the device's launch history as one entry
// (see LostError); in debug mode (SetDebug) it waits for the graph.
//
//go:noinline
func (s *Stream) LaunchGraph(e *Exec) error {
	pc := callerPC()
	if e == nil {
		return errors.New("cuda: Stream.LaunchGraph: nil graph")
	}
	st, err := s.acquire("LaunchGraph")
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	if err := st.noteGraphLaunch(); err != nil {
		return err
	}
	if err := st.ctx.do(func() error { return e.Launch(st.raw) }); err != nil {
		return err
	}
	return st.debugGraph(st.recordGraph(pc))
}

// RunCached runs f through a graph.Cached on the stream: the first call
// captures what f submits, and later calls update the cached executable
// graph in place when they can and launch it (see graph.Cached). The
// graph's launch goes into the device's launch history as one entry, as
// LaunchGraph's does. Beside the driver calls of the capture, the update
// and the launch, a run makes one: the thread's context, asked as every
// call of this package that needs it current asks (graph.Cached's
// RunCurrent, with the context the stream carries). The calls that f
// makes on the calling goroutine in the stream's context (Zero, copies,
// event records) ask no more: the thread is locked with the context
// current for the whole run, and this package notices when f runs code
// under another context (Context.Do, another device's RunCached,
// libcuda.WithContext). f must leave the thread's lock as it found it,
// and must not call into this package while it has made another context
// current by libcuda's CtxSetCurrent or CtxPushCurrent itself.
//
//go:noinline
func (s *Stream) RunCached(c *Cached, f func(s *Stream) error) error {
	pc := callerPC()
	if c == nil || f == nil {
		return errors.New("cuda: Stream.RunCached: nil cache or function")
	}
	st, err := s.acquire("RunCached")
	if err != nil {
		return err
	}
	if err := st.noteGraphLaunch(); err != nil {
		st.mu.RUnlock()
		return err
	}
	st.inCapture.Add(1) // under the read lock: a Close after it sees it
	st.mu.RUnlock()
	defer st.inCapture.Add(-1)
	err = st.ctx.do(func() error {
		// From here to the end of RunCurrent the thread is locked with
		// the context current: f's calls in it need not ask.
		defer st.ctx.leaveInside(st.ctx.enterInside())
		return c.RunCurrent(st.ctx.cu, st.raw, func(libcuda.Stream) error { return f(s) })
	})
	if err != nil {
		return err
	}
	return st.debugGraph(st.recordGraph(pc))
}
