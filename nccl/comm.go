package nccl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	gosync "sync"
	"sync/atomic"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/libcuda"
	ncsync "github.com/purecuda/purecuda/sync"
)

// Comm is one rank's NCCL communicator, on one device. Its collectives
// (AllReduce, Broadcast, ... in this package) take cuda.Slices of that
// device and a cuda.Stream of its primary context.
//
// A Comm's methods and the functions that take one are safe for
// concurrent use; Close waits for the calls in progress. Abort does not
// wait: calls blocked in NCCL return with an error. A Comm dropped
// without Close or Abort is aborted by the garbage collector, and a
// warning is logged once.
type Comm struct {
	st      *commState
	cleanup runtime.Cleanup
}

// The states of a communicator.
const (
	stateOpen    int32 = iota
	stateClosing       // Close is waiting for calls in progress
	stateClosed
	stateAborted
)

// commState is what a Comm's cleanup needs; it does not point back to
// the Comm.
type commState struct {
	mu       gosync.RWMutex // held for reading by calls, for writing by Close
	state    atomic.Int32
	raw      Handle
	cctx     *cuda.Context // the device's primary context, retained until Close or Abort
	dev      cuda.Device
	rank     int
	size     int
	blocking bool
	why      atomic.Pointer[error] // why it was aborted
	once     gosync.Once           // the abort
}

// InitRank joins rank (0 to nranks-1) of the communicator that id names,
// on device dev (ncclCommInitRankScalable with one id; the context is
// dev's primary context). Every rank must call it, each with the same id
// and nranks; it returns once all have.
//
// With Blocking(false) the init is waited for cooperatively: when ctx
// ends first, the communicator is aborted and InitRank returns ctx's
// error. A blocking init (NCCL's default) cannot be interrupted once in
// NCCL: ctx is checked before the call only.
func InitRank(ctx context.Context, dev cuda.Device, nranks, rank int, id UniqueID, opts ...Option) (*Comm, error) {
	switch {
	case ctx == nil:
		return nil, errors.New("nccl: InitRank: nil context.Context")
	case nranks < 1:
		return nil, fmt.Errorf("nccl: InitRank: nranks %d: want at least 1", nranks)
	case rank < 0 || rank >= nranks:
		return nil, fmt.Errorf("nccl: InitRank: rank %d out of range [0, %d)", rank, nranks)
	case id == UniqueID{}:
		return nil, errors.New("nccl: InitRank: the zero UniqueID (make one with NewUniqueID on one rank)")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cf := newConfig(opts)
	cctx, err := dev.Context()
	if err != nil {
		return nil, err
	}
	st := &commState{cctx: cctx, dev: dev, blocking: cf.blocking()}
	cid := CUniqueID{Internal: id}
	err = cctx.Do(func() error {
		err := CommInitRankScalable(&st.raw, int32(nranks), int32(rank), 1, &cid, &cf.c)
		cf.keep()
		return err
	})
	return st.opened(ctx, "ncclCommInitRankScalable", err)
}

// opened finishes an init: it waits for a non-blocking one, aborts the
// communicator on a failure, and reads the rank, size and device.
func (st *commState) opened(ctx context.Context, sym string, err error) (*Comm, error) {
	if err != nil && !errors.Is(err, InProgress) {
		if st.raw != 0 {
			st.abort(err)
		} else {
			_ = st.cctx.Close()
		}
		return nil, callErr(sym, st.raw, err)
	}
	if err != nil {
		if err := st.await(ctx, sym); err != nil {
			return nil, err
		}
	}
	var rank, size int32
	if err := CommUserRank(st.raw, &rank); err != nil {
		st.abort(err)
		return nil, callErr("ncclCommUserRank", st.raw, err)
	}
	if err := CommCount(st.raw, &size); err != nil {
		st.abort(err)
		return nil, callErr("ncclCommCount", st.raw, err)
	}
	st.rank, st.size = int(rank), int(size)
	c := &Comm{st: st}
	c.cleanup = runtime.AddCleanup(c, func(st *commState) { st.collected() }, st)
	return c, nil
}

// InitAll makes one communicator of len(devs) ranks in this process,
// rank i on devs[i] (ncclCommInitAll). The communicators are blocking;
// drive them from one goroutine inside Group, or from one goroutine each.
func InitAll(devs []cuda.Device) ([]*Comm, error) {
	if len(devs) == 0 {
		return nil, errors.New("nccl: InitAll: no devices")
	}
	sts := make([]*commState, len(devs))
	list := make([]int32, len(devs))
	for i, d := range devs {
		cctx, err := d.Context()
		if err != nil {
			for _, st := range sts[:i] {
				_ = st.cctx.Close()
			}
			return nil, err
		}
		sts[i] = &commState{cctx: cctx, dev: d, blocking: true}
		list[i] = int32(d.Ordinal())
	}
	raws := make([]Handle, len(devs))
	if err := CommInitAll(&raws[0], int32(len(devs)), &list[0]); err != nil {
		for i, st := range sts {
			st.raw = raws[i]
			if st.raw != 0 {
				st.abort(err)
			} else {
				_ = st.cctx.Close()
			}
		}
		return nil, callErr("ncclCommInitAll", 0, err)
	}
	comms := make([]*Comm, len(devs))
	for i, st := range sts {
		st.raw = raws[i]
		c, err := st.opened(context.Background(), "ncclCommInitAll", nil)
		if err != nil {
			for _, c := range comms[:i] {
				c.Abort()
			}
			for j := i + 1; j < len(sts); j++ {
				sts[j].raw = raws[j]
				sts[j].abort(err)
			}
			return nil, err
		}
		comms[i] = c
	}
	return comms, nil
}

// Rank is this communicator's rank.
func (c *Comm) Rank() int {
	if c == nil || c.st == nil {
		return -1
	}
	return c.st.rank
}

// Size is the number of ranks of the communicator.
func (c *Comm) Size() int {
	if c == nil || c.st == nil {
		return 0
	}
	return c.st.size
}

// Device is the communicator's device.
func (c *Comm) Device() cuda.Device {
	if c == nil || c.st == nil {
		return cuda.Device{}
	}
	return c.st.dev
}

// Raw is NCCL's handle of the communicator, for calls through the
// generated functions. Do not destroy or abort it.
func (c *Comm) Raw() Handle {
	if c == nil || c.st == nil {
		return 0
	}
	return c.st.raw
}

// acquire holds an open communicator for a call: release it with
// st.mu.RUnlock.
func (c *Comm) acquire(op string) (*commState, error) {
	if c == nil || c.st == nil {
		return nil, fmt.Errorf("nccl: %s on a nil Comm: %w", op, cuda.ErrNil)
	}
	st := c.st
	st.mu.RLock()
	if err := st.usable(op); err != nil {
		st.mu.RUnlock()
		return nil, err
	}
	return st, nil
}

// usable is nil for an open communicator, else why it cannot be used.
func (st *commState) usable(op string) error {
	switch st.state.Load() {
	case stateOpen:
		return nil
	case stateAborted:
		return st.abortedErr(op)
	}
	return fmt.Errorf("nccl: %s: %w", op, cuda.ErrClosed)
}

func (st *commState) abortedErr(op string) error {
	if why := st.why.Load(); why != nil && *why != nil {
		return fmt.Errorf("nccl: %s: %w: %w", op, ErrAborted, *why)
	}
	return fmt.Errorf("nccl: %s: %w", op, ErrAborted)
}

// asyncErr is ncclCommGetAsyncError's answer as an error: nil while the
// communicator is well, InProgress while a non-blocking call runs.
func (st *commState) asyncErr() error {
	var r Result
	if err := CommGetAsyncError(st.raw, &r); err != nil {
		return err
	}
	if r == Success {
		return nil
	}
	return r
}

// await waits cooperatively until the communicator's non-blocking call
// has finished; when it fails or ctx ends first, the communicator is
// aborted and the error returned.
func (st *commState) await(ctx context.Context, sym string) error {
	err := ncsync.Until(ctx, "nccl "+sym, func() (bool, error) {
		if s := st.state.Load(); s == stateAborted {
			return false, st.abortedErr(sym)
		}
		switch err := st.asyncErr(); {
		case err == nil:
			return true, nil
		case errors.Is(err, InProgress):
			return false, nil
		default:
			return false, callErr(sym, st.raw, err)
		}
	})
	if err != nil {
		st.abort(err)
		if errors.Is(err, ErrAborted) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("nccl: %s: %w", sym, err)
		}
		return err
	}
	return nil
}

// settle waits for a call that returned ncclInProgress (a non-blocking
// communicator's).
func (st *commState) settle(ctx context.Context, sym string, err error) error {
	if err == nil || !errors.Is(err, InProgress) {
		return callErr(sym, st.raw, err)
	}
	return st.await(ctx, sym)
}

// Sync waits until the work submitted to s so far has finished, watching
// the communicator meanwhile, cooperatively (package sync's poller): when
// a peer fails (ncclCommGetAsyncError reports an error) or ctx ends
// first, the communicator is aborted — which ends its collectives still
// running — and Sync returns the error. Use it instead of s.Sync to wait
// for collectives that a dead peer could leave hanging.
func (c *Comm) Sync(ctx context.Context, s *cuda.Stream) error {
	st, err := c.acquire("Sync")
	if err != nil {
		return err
	}
	st.mu.RUnlock()
	if s == nil {
		return fmt.Errorf("nccl: Sync: nil stream: %w", cuda.ErrNil)
	}
	err = ncsync.Until(ctx, "nccl Sync", func() (bool, error) {
		if st.state.Load() == stateAborted {
			return false, st.abortedErr("Sync")
		}
		// The stream first: a failure of the work it has run is then
		// in NCCL's asynchronous error already.
		done, err := s.Query()
		if err != nil {
			return false, err
		}
		if err := st.asyncErr(); err != nil && !errors.Is(err, InProgress) {
			return false, callErr("ncclCommGetAsyncError", st.raw, err)
		}
		return done, nil
	})
	if err != nil && !errors.Is(err, cuda.ErrCapturing) {
		st.abort(err)
	}
	return err
}

// Abort aborts the communicator (ncclCommAbort): NCCL stops its
// operations in flight, calls on the communicator fail from then on with
// an error matching ErrAborted, and its context is released. It does not
// wait for calls in progress, and a second Abort, or an Abort after
// Close, does nothing.
func (c *Comm) Abort() {
	if c == nil || c.st == nil {
		return
	}
	c.cleanup.Stop()
	c.st.abort(errors.New("Abort called"))
}

// abort aborts the communicator once, unless it was closed.
func (st *commState) abort(why error) {
	st.once.Do(func() {
		for {
			s := st.state.Load()
			if s == stateClosed || s == stateAborted {
				return
			}
			if st.state.CompareAndSwap(s, stateAborted) {
				break
			}
		}
		st.why.Store(&why)
		if st.raw != 0 {
			if err := st.cctx.Do(func() error { return CommAbort(st.raw) }); err != nil {
				slog.Error("nccl: ncclCommAbort", "err", err)
			}
		}
		if err := st.cctx.Close(); err != nil {
			slog.Error("nccl: releasing the context of an aborted communicator", "err", err)
		}
	})
}

var dropped gosync.Once

// collected aborts a communicator dropped without Close.
func (st *commState) collected() {
	dropped.Do(func() {
		slog.Warn("nccl: a Comm was dropped without Close or Abort; the garbage collector aborted it (further ones are aborted without a log)")
	})
	st.abort(errors.New("dropped without Close"))
}

// Close finalizes the communicator (ncclCommFinalize: its operations in
// flight finish), then destroys it (ncclCommDestroy) and releases its
// context; it waits for calls in progress first. A second Close is an
// error matching cuda.ErrClosed, and so is Close after Abort.
func (c *Comm) Close() error { return c.CloseContext(context.Background()) }

// CloseContext is Close that honours ctx while a non-blocking
// communicator finalizes: when ctx ends or a peer fails first, the
// communicator is aborted instead and the error returned.
func (c *Comm) CloseContext(ctx context.Context) error {
	if c == nil || c.st == nil {
		return fmt.Errorf("nccl: Close on a nil Comm: %w", cuda.ErrNil)
	}
	st := c.st
	if !st.state.CompareAndSwap(stateOpen, stateClosing) {
		return st.usable("Close")
	}
	c.cleanup.Stop()
	st.mu.Lock()
	defer st.mu.Unlock()
	err := st.cctx.Do(func() error { return CommFinalize(st.raw) })
	if err = st.settle(ctx, "ncclCommFinalize", err); err != nil {
		st.state.Store(stateOpen) // for abort, which does the rest
		st.abort(err)
		return fmt.Errorf("nccl: Close: %w instead: %w", ErrAborted, err)
	}
	// Closed before the destroy: an abort from another goroutine's
	// failed wait, from now on, leaves it alone.
	if !st.state.CompareAndSwap(stateClosing, stateClosed) {
		return st.usable("Close")
	}
	err = st.cctx.Do(func() error { return CommDestroy(st.raw) })
	err = callErr("ncclCommDestroy", st.raw, err)
	return errors.Join(err, st.cctx.Close())
}

// Split makes a communicator of the ranks that pass the same color, ranked
// by key (then by their rank here) (ncclCommSplit). Every rank must call
// it; a rank that passes a negative color (NCCL_SPLIT_NOCOLOR) takes part
// but gets no communicator: nil and no error. The new communicator is on
// the same device.
func (c *Comm) Split(color, key int, opts ...Option) (*Comm, error) {
	if color < 0 {
		color = NCCL_SPLIT_NOCOLOR
	}
	return c.derive("ncclCommSplit", opts, func(st *commState, out *Handle, cf *Config) error {
		return CommSplit(st.raw, int32(color), int32(key), out, cf)
	})
}

// Shrink makes a communicator of this one's ranks without those listed
// (ncclCommShrink, NCCL_SHRINK_DEFAULT); every rank not listed must call
// it, with the same list. The ranks keep their order.
func (c *Comm) Shrink(exclude []int, opts ...Option) (*Comm, error) {
	ex := make([]int32, len(exclude)+1) // never empty: &ex[0] is valid
	for i, r := range exclude {
		if r < 0 || r >= c.Size() {
			return nil, fmt.Errorf("nccl: Shrink: excluded rank %d out of range [0, %d)", r, c.Size())
		}
		if r == c.Rank() {
			return nil, fmt.Errorf("nccl: Shrink: this rank (%d) is in the excluded list", r)
		}
		ex[i] = int32(r)
	}
	return c.derive("ncclCommShrink", opts, func(st *commState, out *Handle, cf *Config) error {
		return CommShrink(st.raw, &ex[0], int32(len(exclude)), out, cf, NCCL_SHRINK_DEFAULT)
	})
}

// derive runs Split or Shrink and opens the communicator it makes.
func (c *Comm) derive(sym string, opts []Option, call func(st *commState, out *Handle, cf *Config) error) (*Comm, error) {
	st, err := c.acquire(sym)
	if err != nil {
		return nil, err
	}
	defer st.mu.RUnlock()
	cf := newConfig(opts)
	cctx, err := st.dev.Context()
	if err != nil {
		return nil, err
	}
	child := &commState{cctx: cctx, dev: st.dev, blocking: cf.blocking()}
	err = cctx.Do(func() error {
		err := call(st, &child.raw, &cf.c)
		cf.keep()
		return err
	})
	if err == nil && child.raw == 0 {
		_ = cctx.Close() // NCCL_SPLIT_NOCOLOR
		return nil, nil
	}
	if err != nil && !errors.Is(err, InProgress) {
		err = callErr(sym, st.raw, err)
	}
	return child.opened(context.Background(), sym, err)
}

// checkStream fails unless s is a stream of the communicator's context.
func (st *commState) checkStream(op string, s *cuda.Stream) error {
	if s == nil {
		return fmt.Errorf("nccl: %s: stream: nil: %w", op, cuda.ErrNil)
	}
	var cu libcuda.Context
	if err := libcuda.StreamGetCtx(s.Raw(), &cu); err != nil {
		return fmt.Errorf("nccl: %s: stream: cuStreamGetCtx: %w", op, err)
	}
	if cu != st.cctx.Raw() {
		return fmt.Errorf("nccl: %s: stream: of another context than the communicator's (device %d's primary context)", op, st.dev.Ordinal())
	}
	return nil
}
