package cublaslt

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	gosync "sync"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/graph"
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
	mu     gosync.RWMutex // held for reading by calls, for writing by changes and Close
	raw    Handle
	hold   *cuda.ContextHold
	s      *cuda.Stream
	ws     cuda.Slice[byte]
	closed bool

	plansMu gosync.Mutex
	plans   map[key]*plan
}

// New creates a cuBLASLt handle (cublasLtCreate) in the stream's context;
// its Matmuls run on the stream.
func New(s *cuda.Stream) (*Lt, error) {
	hold, err := s.HoldContext()
	if err != nil {
		return nil, fmt.Errorf("cublaslt: New: %w", err)
	}
	st := &state{hold: hold, s: s, plans: map[key]*plan{}}
	err = s.Do("cublasLtCreate", nil, func(libcuda.Stream) error {
		if err := Create(&st.raw); err != nil {
			return fmt.Errorf("cublaslt: cublasLtCreate: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, errors.Join(err, hold.Release())
	}
	lt := &Lt{st: st}
	lt.cleanup = runtime.AddCleanup(lt, func(st *state) {
		droppedOnce.Do(func() {
			slog.Warn("cublaslt: an Lt was dropped without Close; the garbage collector destroyed it (further ones are destroyed without a log)")
		})
		st.close()
	}, st)
	return lt, nil
}

var droppedOnce gosync.Once

// acquire read-locks an open handle for a call.
func (lt *Lt) acquire(op string) (*state, error) {
	if lt == nil || lt.st == nil {
		return nil, fmt.Errorf("cublaslt: %s on a nil Lt: %w", op, cuda.ErrNil)
	}
	st := lt.st
	st.mu.RLock()
	if st.closed {
		st.mu.RUnlock()
		return nil, fmt.Errorf("cublaslt: %s: %w", op, cuda.ErrClosed)
	}
	return st, nil
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
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return fmt.Errorf("cublaslt: SetWorkspace: %w", cuda.ErrClosed)
	}
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
// in progress have returned, handed to graph.Postpone as package cublas
// does, so that no capture in progress meets it; a failure is logged.
// Closing twice is an error matching cuda.ErrClosed.
func (lt *Lt) Close() error {
	if lt == nil || lt.st == nil {
		return fmt.Errorf("cublaslt: Close on a nil Lt: %w", cuda.ErrNil)
	}
	st := lt.st
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return fmt.Errorf("cublaslt: Close: %w", cuda.ErrClosed)
	}
	st.closed = true
	st.ws = cuda.Slice[byte]{}
	st.mu.Unlock()
	lt.cleanup.Stop()
	st.destroy()
	return nil
}

func (st *state) close() {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return
	}
	st.closed = true
	st.mu.Unlock()
	st.destroy()
}

func (st *state) destroy() {
	graph.Postpone(func() {
		err := st.hold.Do(func() error {
			var errs []error
			for _, p := range st.plans {
				errs = append(errs, p.destroy())
			}
			if err := Destroy(st.raw); err != nil {
				errs = append(errs, fmt.Errorf("cublasLtDestroy: %w", err))
			}
			return errors.Join(errs...)
		})
		if err != nil {
			slog.Error("cublaslt: destroying a handle", "err", err)
		}
		if err := st.hold.Release(); err != nil {
			slog.Error("cublaslt: releasing the context of a handle", "err", err)
		}
	})
}
