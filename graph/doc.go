// Package graph captures work issued on a stream into CUDA graphs,
// instantiates, launches, uploads and updates them, and keeps what the
// captured work uses alive for as long as a graph can still run it.
//
//	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
//		return fn.Launch(grid, block, 0, s, buf, n)
//	})
//	exec, err := g.Instantiate()
//	err = exec.Launch(s)
//
// Cached does what CUDA.jl's @captured does: its first Run captures,
// instantiates and launches; later runs capture again and update the
// executable graph in place when the topology allows, else instantiate
// again. A run in a loop makes the driver calls that C's loop of capture,
// update and launch makes, and two more to find the stream's context and
// the thread's (Run); none more where the caller's thread has the
// context current already (RunCurrent). It allocates nothing.
//
// # Threads
//
// The driver ties a capture in global or thread-local mode, and the capture
// mode itself, to the OS thread: calls that are refused during a capture
// are judged by the thread that makes them, and such a capture must end on
// the thread that began it. Capture therefore runs on a locked OS thread
// from the begin of the capture to its end, with the stream's context
// current, and restores the thread's previous context after. The function
// it runs is called on that thread: work it issues itself is issued there;
// goroutines it starts are not.
//
// # Modes
//
// All three capture modes can be used. DefaultMode is thread-local: in a Go
// program other goroutines run on other threads and do unrelated CUDA work,
// and in global mode any of them that allocates, frees, registers,
// queries or synchronizes in the default (global) mode of its thread
// invalidates the capture. Thread-local mode still refuses those calls on
// the capturing thread itself, where they are mistakes in the captured
// function, and leaves other goroutines alone. Relaxed mode refuses
// nothing but cuCtxSynchronize.
//
// Global mode is supported and safe with the rest of this module: what this
// module does on other goroutines while a capture made through it is in
// progress (waits in package sync, releases of leases, graph destruction,
// the work of package hostmem) runs in relaxed mode or is postponed until
// the captures end. Other code must do the same: run potentially unsafe
// calls through sync.CaptureSafe (relaxed only while a capture is in
// progress) or sync.Relaxed, or queue them with sync.Postpone.
//
// # Failed captures
//
// A capture the driver invalidated returns a *CaptureError that matches
// ErrInvalidated. The driver does not say which call invalidated it: the
// error names the call when the captured function returned that call's
// error, and otherwise says that the call was made elsewhere. The partial
// graph is destroyed. A panic in the captured function ends the capture,
// destroys what it made and is re-raised.
//
// # Captures in progress and postponed work
//
// Captures in progress are registered in one place, package sync's
// registry (sync.StartCapture): every capture made through this package is,
// from the moment it is admitted until it has ended (also when ending it
// failed), and so is code that announces its own captures to package sync.
// sync.CapturesInProgress reads that registry. sync.Postpone queues a
// function there, to run once none is in progress (Drain waits for it): this is how work that no capture mode allows
// (cuCtxSynchronize) is kept from invalidating them. The queue is started
// by the end of the last capture, never by a timer; a capture that starts
// while a postponed function runs, or while a guarded driver call is in
// flight, blocks until it ends (it never spins), except behind a context
// wait's cuCtxSynchronize, which it waits for only until the call is
// inside the driver (see package sync: Contexts). Captures begun directly
// through the driver without sync.StartCapture cannot be seen, and a
// postponed function can run, and break them, while they are in progress.
//
// # Leases
//
// Lease attaches a release function to the capture in progress on a
// stream: on the stream the capture began on, with no driver call; on one
// that joined it, after asking the driver which capture that is. It runs
// once the graph made by that capture and every executable
// graph made from it are destroyed (or updated with another graph) and
// their last launches have finished. An executable graph's launches run
// one after another, so an executable graph that leases anything tracks
// them with one event, recorded on the stream of its latest launch when
// the launches must be known finished (at Destroy, and at an update that
// has to know) rather than after each launch, which C's launch loops do not
// pay; a launch notes its stream and the stream's unique id
// (cuStreamGetId, asked once per stream), so that a stream destroyed
// before then, whose handle the driver may have given to another stream,
// is noticed, and the release then waits for the whole context. After an
// update that had to ask, each launch records the event at once, so that
// the next update finds it complete. Destroy returns at once and the wait
// (through package sync) and the release run on a goroutine of this
// package; Drain waits for all of that to end. An update that finds the
// launches finished (as in a loop that waits for each run: the stream is
// idle, or the event complete) keeps the event for the new launches and
// runs the old releases on the calling goroutine before it returns, with
// no lock of this package held; one whose capture leased the same
// functions through LeaseCounted (hostmem's Use) runs them without asking.
//
// # Thread safety
//
// Graph, Exec and Cached may be used from several goroutines: their
// methods are serialized. A Graph or Exec that is dropped without Destroy
// is destroyed after the garbage collector has found it unreachable, once
// no capture is in progress, and its leases are released after that.
//
// # A lost context
//
// After a kernel fault the context's calls fail with a sticky Result:
// captures, instantiations and launches return an error matching
// libcuda.ErrContextLost (errors.Is); the process must restart to use
// the device again.
package graph
