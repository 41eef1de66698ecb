package cublaslt

import (
	"errors"
	"fmt"
	"runtime"
	gosync "sync"
	"sync/atomic"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/internal/handle"
	"github.com/purecuda/purecuda/libcuda"
)

// Lt is a cuBLASLt handle bound to a stream, with the plans (descriptors,
// layouts and the algorithm cuBLASLt's heuristic chose) of the shapes it
// has multiplied: Matmul asks the heuristic once per shape.
//
// An Lt's methods and Matmul are safe for concurrent use; SetWorkspace and
// Close wait for calls in progress. An Lt dropped without Close is
// destroyed by the garbage collector, and a warning is logged.
type Lt struct {
	st      *state
	cleanup runtime.Cleanup
}

type state struct {
	life *handle.Life
	raw  Handle
	ws   cuda.Slice[byte] // guarded by life's lock

	plansMu gosync.Mutex
	plans   map[key]*plan
	last    atomic.Pointer[plan] // the plan found last: a call of the same shape takes no lock
}

// New creates a cuBLASLt handle (cublasLtCreate) in the stream's context;
// its Matmuls run on the stream.
func New(s *cuda.Stream) (*Lt, error) {
	st := &state{plans: map[key]*plan{}}
	life, err := handle.Open(s, "cublaslt", "cublasLtCreate", func(libcuda.Stream) error {
		if err := Create(&st.raw); err != nil {
			return dl.Failed("cublaslt", "cublasLtCreate", err)
		}
		return nil
	}, st.destroy)
	if err != nil {
		return nil, err
	}
	st.life = life
	lt := &Lt{st: st}
	lt.cleanup = runtime.AddCleanup(lt, func(st *state) { st.life.Collected("Lt") }, st)
	return lt, nil
}

// acquire holds an open handle for a call: release it with
// st.life.Release.
func (lt *Lt) acquire(op string) (*state, error) {
	if lt == nil || lt.st == nil {
		return nil, fmt.Errorf("cublaslt: %s on a nil Lt: %w", op, cuda.ErrNil)
	}
	if err := lt.st.life.Acquire(op); err != nil {
		return nil, err
	}
	return lt.st, nil
}

// Raw is the cuBLASLt handle, for calls through the generated functions.
// Do not destroy it.
func (lt *Lt) Raw() Handle {
	if lt == nil || lt.st == nil {
		return 0
	}
	return lt.st.raw
}

// SetWorkspace gives Matmul a workspace: the heuristic may then choose
// algorithms that need up to ws.Len() bytes (NVIDIA suggests 32 MiB on
// Hopper). Plans made for another workspace size are made again. The
// workspace is recorded as used by every Matmul; it must stay allocated
// until the Lt is closed or given another one.
func (lt *Lt) SetWorkspace(ws cuda.Slice[byte]) error {
	if lt == nil || lt.st == nil {
		return fmt.Errorf("cublaslt: SetWorkspace on a nil Lt: %w", cuda.ErrNil)
	}
	st := lt.st
	if err := st.life.Lock("SetWorkspace"); err != nil {
		return err
	}
	defer st.life.Unlock()
	st.ws = ws
	return nil
}

// Plans is the number of shapes the Lt holds a plan for.
func (lt *Lt) Plans() int {
	if lt == nil || lt.st == nil {
		return 0
	}
	lt.st.plansMu.Lock()
	defer lt.st.plansMu.Unlock()
	return len(lt.st.plans)
}

// Close destroys the plans and the handle (cublasLtDestroy) once the calls
// in progress have returned, handed to sync.Postpone as package cublas
// does, so that no capture in progress meets it; a failure is logged.
// Closing twice is an error matching cuda.ErrClosed.
func (lt *Lt) Close() error {
	if lt == nil || lt.st == nil {
		return fmt.Errorf("cublaslt: Close on a nil Lt: %w", cuda.ErrNil)
	}
	st := lt.st
	if err := st.life.Close(func() { st.ws = cuda.Slice[byte]{} }); err != nil {
		return err
	}
	lt.cleanup.Stop()
	return nil
}

// destroy destroys the plans and the handle; the context is current.
func (st *state) destroy() error {
	var errs []error
	st.plansMu.Lock()
	for _, p := range st.plans {
		errs = append(errs, p.destroy())
	}
	st.plansMu.Unlock()
	if err := Destroy(st.raw); err != nil {
		errs = append(errs, dl.Failed("cublaslt", "cublasLtDestroy", err))
	}
	return errors.Join(errs...)
}
