package cuda

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	gosync "sync"
	"sync/atomic"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Context is a device's primary context, retained. Every method of the
// values made from it (streams, memory, modules, events) runs with it
// current on a locked OS thread: the caller never makes it current nor
// locks a thread.
//
// Close releases the caller's hold on the primary context. The driver's
// context stays alive while streams, slices, events or modules made from
// this Context are open; it is released when the last of them is closed
// (or collected). A closed Stream keeps it a little longer: the event
// that marks the end of its work, which a later Free of memory used on it
// waits for, goes once the garbage collector finds the stream unreachable
// (and the memory used on it freed), as a long-running program's
// collections do. A Context dropped without Close is released by the
// garbage collector, and a warning is logged.
//
// # Threads
//
// A call that needs the context current finds out which context the
// calling thread has (one cuCtxGetCurrent). When it is this one, that is
// all. When the thread had none, the call makes this one current and leaves
// it so, as the CUDA runtime does with the primary context, so the next
// call on the thread costs nothing more. When the thread had another, the
// call restores it afterwards. A launch on a Stream is the exception: the
// driver runs it in the stream's context whatever context the thread has
// (DESIGN.md, driver facts), so it neither asks for nor changes the
// thread's context (cooperative and cluster launches, through
// cuLaunchKernelEx, still do). Inside the function of a RunCached, the
// calls made on its goroutine in the stream's context ask nothing either:
// the run keeps the context current on its locked thread throughout.
//
// A Context's methods are safe for concurrent use.
type Context struct {
	st      *ctxState
	cleanup runtime.Cleanup
}

// ctxState is what the values made from a Context share. It does not
// point back to the Context, so that a dropped Context can be collected.
type ctxState struct {
	dev    Device
	dv     *devState // the device's, shared by its Contexts: lost or not, the launch history
	cu     libcuda.Context
	refs   atomic.Int64 // the Context itself (until Close) and each open value made from it
	closed atomic.Bool  // Close was called on the Context
	major  atomic.Int32 // the device's compute capability major, once read (computeMajor)

	graphMem graphMemList // graph allocations that may outlive their capture (graphmem.go)

	// inside is the goroutine (curG) that runs the function of a
	// RunCached on a stream of this context, or 0: its thread is locked
	// with this context current until that RunCached returns, so the
	// calls the function makes in this context (Zero, the copies, event
	// records) run as they are, without asking the thread for its
	// context (do), as long as no call of this package or of
	// libcuda.WithContext has made another context current anywhere
	// since the mark (insideAt, switchCount): the function may run code
	// under another context (another device's RunCached, Context.Do) and
	// call into this one from there. One
	// goroutine holds it at a time; a RunCached that finds it held runs
	// its function's calls the ordinary way.
	inside   atomic.Uintptr
	insideAt atomic.Uint64 // ctxSwitches when inside was marked
}

// ctxSwitches counts the times a call of this package made a context
// current on a thread that had another one (or none): a mark of
// ctxState.inside made before the latest holds no more. (The restore at
// the end of such a call needs no count: a mark made before the switch
// is stale already, and one made after it belongs to a run inside the
// call, which has ended by then.) switchCount adds libcuda.WithContext's
// (Context.Do, and packages graph, sync and hostmem when they run a
// caller's function in a context): both only grow, so their sum is
// unchanged only when neither changed.
var ctxSwitches atomic.Uint64

func switchCount() uint64 { return ctxSwitches.Load() + libcuda.ContextSwitches() }

// Context retains the device's primary context (cuDevicePrimaryCtxRetain)
// and returns it. Each call retains it once more; each Context is closed
// on its own.
//
// On a device whose context was lost in this process (ErrContextLost) it
// returns the first failure at once: the device cannot be used again
// until the process restarts.
func (d Device) Context() (*Context, error) {
	dv := stateOf(d)
	if l := dv.lost.Load(); l != nil {
		return nil, l
	}
	if err := libcuda.Init(0); err != nil {
		return nil, driverErr("cuInit", err)
	}
	var cu libcuda.Context
	if err := libcuda.DevicePrimaryCtxRetain(&cu, d.dev); err != nil {
		err = driverErr("cuDevicePrimaryCtxRetain", err)
		if errors.Is(err, ErrContextLost) {
			return nil, dv.lose(nil, err, nil)
		}
		return nil, err
	}
	st := &ctxState{dev: d, dv: dv, cu: cu}
	st.refs.Store(1)
	c := &Context{st: st}
	c.cleanup = runtime.AddCleanup(c, func(st *ctxState) {
		dropped("Context", "Close")
		st.closed.Store(true)
		st.unref()
	}, st)
	return c, nil
}

// Device is the device the context belongs to (the zero Device for a nil
// Context).
func (c *Context) Device() Device {
	if c == nil || c.st == nil {
		return Device{}
	}
	return c.st.dev
}

// Raw is the driver's handle of the context, for calls through libcuda.
// Do not destroy or release it.
func (c *Context) Raw() libcuda.Context {
	if c == nil || c.st == nil {
		return 0
	}
	return c.st.cu
}

// Close releases the context. Values made from it that are still open keep
// the driver's context until they are closed. Closing twice is an error
// matching ErrClosed.
func (c *Context) Close() error {
	if c == nil || c.st == nil {
		return nilErr("Context", "Close")
	}
	if c.st.closed.Swap(true) {
		return closedErr("Context", "Close")
	}
	c.cleanup.Stop()
	return c.st.unref()
}

// live returns the state of an open context.
func (c *Context) live(op string) (*ctxState, error) {
	if c == nil || c.st == nil {
		return nil, nilErr("Context", op)
	}
	if c.st.closed.Load() {
		return nil, closedErr("Context", op)
	}
	return c.st, nil
}

// hold returns the state of an open context with one more count on it,
// which the caller drops (unref) when done: a Close meanwhile then leaves
// the driver's context alone until then.
func (c *Context) hold(op string) (*ctxState, error) {
	st, err := c.live(op)
	if err != nil {
		return nil, err
	}
	if err := st.lostErr(); err != nil {
		return nil, err
	}
	if !st.tryRef() {
		return nil, closedErr("Context", op)
	}
	return st, nil
}

// Do runs f on a locked OS thread with the context current, and makes
// current again what the thread had before: for calls through libcuda
// that need the current context.
func (c *Context) Do(f func() error) error {
	st, err := c.hold("Do")
	if err != nil {
		return err
	}
	defer st.drop()
	if f == nil {
		return errors.New("cuda: Context.Do: nil function")
	}
	return libcuda.WithContext(st.cu, f)
}

// Sync waits until all work submitted in the context has finished
// (package sync's Context: on a helper thread, cancelled by ctx). While a
// capture is in progress it fails at once (sync.ErrCapturing).
func (c *Context) Sync(ctx context.Context) error {
	st, err := c.hold("Sync")
	if err != nil {
		return err
	}
	defer st.drop()
	if err := st.lostErr(); err != nil {
		return err
	}
	n := st.dv.launches.Load()
	if err := sync.Context(ctx, st.cu); err != nil {
		return st.check(err)
	}
	st.dv.noteSynced(n)
	return nil
}

// StreamPriorities is the range of stream priorities the context allows
// (cuCtxGetStreamPriorityRange): lower numbers mean higher priority, so
// greatest is at most least.
func (c *Context) StreamPriorities() (least, greatest int, err error) {
	st, err := c.hold("StreamPriorities")
	if err != nil {
		return 0, 0, err
	}
	defer st.drop()
	var l, g int32
	err = st.do(func() error { return libcuda.CtxGetStreamPriorityRange(&l, &g) })
	if err != nil {
		return 0, 0, driverErr("cuCtxGetStreamPriorityRange", err)
	}
	return int(l), int(g), nil
}

// MemInfo is the device memory free and in total, in bytes, as the
// context sees it (cuMemGetInfo).
func (c *Context) MemInfo() (free, total uint64, err error) {
	st, err := c.hold("MemInfo")
	if err != nil {
		return 0, 0, err
	}
	defer st.drop()
	err = st.do(func() error { return libcuda.MemGetInfo(&free, &total) })
	if err != nil {
		return 0, 0, driverErr("cuMemGetInfo", err)
	}
	return free, total, nil
}

// ref counts one more value that needs the driver's context; the caller
// holds a value that counts already.
func (st *ctxState) ref() { st.refs.Add(1) }

// drop is unref for a hold that ends in a defer: a failure is logged.
func (st *ctxState) drop() {
	if err := st.unref(); err != nil {
		logErr("releasing the context", err)
	}
}

// tryRef counts one more value unless the context has been released: for
// values made from the Context itself, which a Close may race with.
func (st *ctxState) tryRef() bool {
	for {
		n := st.refs.Load()
		if n <= 0 {
			return false
		}
		if st.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// unref drops one; the last releases the primary context.
func (st *ctxState) unref() error {
	n := st.refs.Add(-1)
	if n > 0 {
		return nil
	}
	if n < 0 {
		return errors.New("cuda: context released more often than retained")
	}
	if err := libcuda.DevicePrimaryCtxRelease(st.dev.dev); err != nil {
		return driverErr("cuDevicePrimaryCtxRelease", err)
	}
	return nil
}

// enter locks the calling goroutine to its thread and makes st current;
// leave undoes it (see Context, # Threads). Between them the thread's
// context is st's.
func (st *ctxState) enter() (prev libcuda.Context, err error) { return st.makeCurrent(st.cu, true) }

// makeCurrent is enter, which checks the context's loss first when
// checkLost; cu is st.cu, which a stream passes from its own copy.
func (st *ctxState) makeCurrent(cu libcuda.Context, checkLost bool) (prev libcuda.Context, err error) {
	if checkLost {
		if err := st.lostErr(); err != nil {
			return 0, err
		}
	}
	runtime.LockOSThread()
	if err := libcuda.CtxGetCurrent(&prev); err != nil {
		runtime.UnlockOSThread()
		return 0, st.check(driverErr("cuCtxGetCurrent", err))
	}
	if prev != cu {
		ctxSwitches.Add(1)
		if err := libcuda.CtxSetCurrent(cu); err != nil {
			runtime.UnlockOSThread()
			return 0, st.check(driverErr("cuCtxSetCurrent", err))
		}
	}
	return prev, nil
}

// leave restores the context enter found, if it was another one, and
// unlocks the thread.
func (st *ctxState) leave(prev libcuda.Context) error {
	var err error
	if prev != 0 && prev != st.cu {
		rerr := libcuda.CtxSetCurrent(prev)
		// A context destroyed meanwhile cannot be restored, and needs not
		// be: the call's own work is done.
		if rerr != nil && !errors.Is(rerr, libcuda.CUDA_ERROR_INVALID_CONTEXT) && !errors.Is(rerr, libcuda.CUDA_ERROR_CONTEXT_IS_DESTROYED) {
			err = driverErr("cuCtxSetCurrent (restoring the thread's context)", rerr)
		}
	}
	runtime.UnlockOSThread()
	return err
}

// enter is ctxState.enter for a call on the stream, which holds st.mu:
// the context's loss was checked by acquire, and the stream carries the
// context's handle.
func (st *streamState) enter() (prev libcuda.Context, err error) {
	return st.ctx.makeCurrent(st.cu, false)
}

// leave is ctxState.leave for a call on the stream.
func (st *streamState) leave(prev libcuda.Context) error {
	if prev != 0 && prev != st.cu {
		return st.ctx.leave(prev)
	}
	runtime.UnlockOSThread()
	return nil
}

// do runs f between enter and leave. leave is deferred: a panic in f (a
// user's function, in RunCached) still restores the thread's context and
// unlocks the thread before it goes on up. On the goroutine inside a
// RunCached's function (st.inside), whose thread is locked with st
// current already, it runs f as it is: no driver call of its own.
func (st *ctxState) do(f func() error) (err error) {
	if g := st.inside.Load(); g != 0 && g == curG() && st.insideAt.Load() == switchCount() {
		if err := st.lostErr(); err != nil {
			return err
		}
		return st.check(f())
	}
	prev, err := st.enter()
	if err != nil {
		return err
	}
	defer func() {
		if lerr := st.leave(prev); lerr != nil {
			err = errors.Join(err, lerr)
		}
		err = st.check(err)
	}()
	return f()
}

// enterInside marks the calling goroutine as inside a RunCached's
// function (st.inside) when no other goroutine is; the caller's thread is
// locked with st current, and stays so until leaveInside. It returns
// whether it marked, for leaveInside.
func (st *ctxState) enterInside() bool {
	if !st.inside.CompareAndSwap(0, curG()) {
		return false
	}
	// Only this goroutine can match the mark, and it is here: no do
	// reads insideAt before it is set.
	st.insideAt.Store(switchCount())
	return true
}

// leaveInside ends enterInside's mark, if it made one.
func (st *ctxState) leaveInside(marked bool) {
	if marked {
		st.inside.Store(0)
	}
}

// dropped logs, once for each kind of value, that a value was collected
// without being closed; every such value is released all the same.
func dropped(what, closer string) {
	v, _ := droppedKinds.LoadOrStore(what, new(gosync.Once))
	v.(*gosync.Once).Do(func() {
		slog.Warn(fmt.Sprintf("cuda: a %s was dropped without %s; the garbage collector released it (further ones are released without a log)", what, closer))
	})
}

var droppedKinds gosync.Map // kind name -> *sync.Once

// EnablePeerAccess lets kernels and copies in this context use memory
// allocated in other's context directly (cuCtxEnablePeerAccess), one way:
// call it on each side for both. It is refused without a driver call for
// two contexts of one device, and where Device.CanAccessPeer says no the
// driver's error matches CUDA_ERROR_PEER_ACCESS_UNSUPPORTED. Enabling it
// again is not an error. CopyPeer works without it (the driver stages the
// copy).
func (c *Context) EnablePeerAccess(other *Context) error {
	st, err := c.hold("EnablePeerAccess")
	if err != nil {
		return err
	}
	defer st.drop()
	ost, err := other.hold("EnablePeerAccess")
	if err != nil {
		return fmt.Errorf("cuda: Context.EnablePeerAccess: the peer: %w", err)
	}
	defer ost.drop()
	if st.dev.dev == ost.dev.dev {
		return fmt.Errorf("cuda: Context.EnablePeerAccess: both contexts are on device %d: a device is not its own peer", st.dev.ordinal)
	}
	err = st.do(func() error { return libcuda.CtxEnablePeerAccess(ost.cu, 0) })
	if err != nil && !errors.Is(err, libcuda.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
		return driverErr("cuCtxEnablePeerAccess", err)
	}
	return nil
}
