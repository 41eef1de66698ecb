package cublas

import (
	"fmt"
	"log/slog"
	"runtime"
	"unsafe"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/internal/handle"
	"github.com/purecuda/purecuda/libcuda"
)

// BLAS is a cuBLAS handle bound to a stream: every call made through it is
// submitted to that stream, in its context, on a locked OS thread, with the
// Slices it reads and writes recorded as used by the stream (cuda's
// Stream.Do), so that their Free waits for the work.
//
// A BLAS's methods and the functions that take one are safe for concurrent
// use; SetStream, SetWorkspace, SetMathMode and Close wait for calls in
// progress. A BLAS dropped without Close is destroyed by the garbage
// collector, and a warning is logged.
type BLAS struct {
	st      *state
	cleanup runtime.Cleanup
}

// state is what the cleanup of a dropped BLAS needs; it does not point
// back to the BLAS.
type state struct {
	life *handle.Life
	raw  Handle
	ws   cuda.Slice[byte] // the workspace set with SetWorkspace; zero when none; guarded by life's lock
}

// New creates a cuBLAS handle (cublasCreate_v2) in the stream's context,
// bound to the stream (cublasSetStream_v2). Create handles before a
// capture begins: cublasCreate allocates device memory, which a capture in
// global mode on another thread does not allow.
func New(s *cuda.Stream) (*BLAS, error) {
	st := &state{}
	life, err := handle.Open(s, "cublas", "cublasCreate_v2", func(raw libcuda.Stream) error {
		if err := Create(&st.raw); err != nil {
			return dl.Failed("cublas", "cublasCreate_v2", err)
		}
		if err := SetStream(st.raw, raw); err != nil {
			if derr := Destroy(st.raw); derr != nil {
				logErr("destroying a handle whose stream could not be set", derr)
			}
			return dl.Failed("cublas", "cublasSetStream_v2", err)
		}
		return nil
	}, func() error { return callErr("cublasDestroy_v2", Destroy(st.raw)) })
	if err != nil {
		return nil, err
	}
	st.life = life
	b := &BLAS{st: st}
	b.cleanup = runtime.AddCleanup(b, func(st *state) { st.life.Collected("BLAS") }, st)
	return b, nil
}

// acquire holds an open handle for a call: release it with
// st.life.Release.
func (b *BLAS) acquire(op string) (*state, error) {
	if b == nil || b.st == nil {
		return nil, nilBLAS(op)
	}
	if err := b.st.life.Acquire(op); err != nil {
		return nil, err
	}
	return b.st, nil
}

//go:noinline
func nilBLAS(op string) error { return fmt.Errorf("cublas: %s on a nil BLAS: %w", op, cuda.ErrNil) }

// lock holds an open handle for a change: release it with
// st.life.Unlock.
func (b *BLAS) lock(op string) (*state, error) {
	if b == nil || b.st == nil {
		return nil, fmt.Errorf("cublas: %s on a nil BLAS: %w", op, cuda.ErrNil)
	}
	if err := b.st.life.Lock(op); err != nil {
		return nil, err
	}
	return b.st, nil
}

// Raw is the cuBLAS handle, for calls through the generated functions
// (which must run with the stream's context current: use the Stream's Do).
// Do not destroy it.
func (b *BLAS) Raw() Handle {
	if b == nil || b.st == nil {
		return 0
	}
	return b.st.raw
}

// Stream is the stream the handle submits its work to.
func (b *BLAS) Stream() *cuda.Stream {
	if b == nil || b.st == nil {
		return nil
	}
	if b.st.life.Acquire("Stream") != nil {
		return nil
	}
	defer b.st.life.Release()
	return b.st.life.Stream()
}

// SetStream binds the handle to another stream of the same context
// (cublasSetStream_v2). cuBLAS forgets the handle's workspace when its
// stream changes; SetStream sets it again (cublasSetWorkspace_v2), so a
// workspace given with SetWorkspace stays in use.
func (b *BLAS) SetStream(s *cuda.Stream) error {
	st, err := b.lock("SetStream")
	if err != nil {
		return err
	}
	defer st.life.Unlock()
	var ops [1]cuda.Operand
	n := st.workspaceOperand(&ops)
	err = s.Do("cublasSetStream_v2", ops[:n], func(raw libcuda.Stream) error {
		if err := SetStream(st.raw, raw); err != nil {
			return dl.Failed("cublas", "cublasSetStream_v2", err)
		}
		if n > 0 {
			if err := SetWorkspace(st.raw, unsafe.Pointer(devPtr[byte](ops[0].Ptr())), uint64(st.ws.Len())); err != nil {
				return fmt.Errorf("cublas: after cublasSetStream_v2: %w", dl.Failed("", "cublasSetWorkspace_v2", err))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	st.life.SetStream(s)
	return nil
}

// SetWorkspace gives the handle a workspace of its own
// (cublasSetWorkspace_v2), in place of the one cuBLAS allocates. Inside a
// Stream.Capture cuBLAS otherwise takes workspace from the stream-ordered
// allocator for each captured graph; with a workspace of the handle's own
// the graphs share it (and so must not run at the same time). NVIDIA
// suggests 32 MiB on Hopper. The workspace is used by every later call of
// the handle, which records its use; it must stay allocated until the
// handle is closed or given another one. A zero Slice gives the handle
// back to cuBLAS's own workspace.
func (b *BLAS) SetWorkspace(ws cuda.Slice[byte]) error {
	st, err := b.lock("SetWorkspace")
	if err != nil {
		return err
	}
	defer st.life.Unlock()
	var ops [1]cuda.Operand
	n := 0
	if ws.Len() > 0 {
		ops[0] = ws.Operand(cuda.ReadWrite)
		n = 1
	}
	err = st.life.Stream().Do("cublasSetWorkspace_v2", ops[:n], func(libcuda.Stream) error {
		var p unsafe.Pointer
		if n > 0 {
			p = unsafe.Pointer(devPtr[byte](ops[0].Ptr()))
		}
		if err := SetWorkspace(st.raw, p, uint64(ws.Len())); err != nil {
			return dl.Failed("cublas", "cublasSetWorkspace_v2", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	st.ws = ws
	return nil
}

// workspaceOperand puts the workspace in ops and says how many it put.
func (st *state) workspaceOperand(ops *[1]cuda.Operand) int {
	if st.ws.Len() == 0 {
		return 0
	}
	ops[0] = st.ws.Operand(cuda.ReadWrite)
	return 1
}

// SetMathMode sets the handle's math mode (cublasSetMathMode):
// CUBLAS_DEFAULT_MATH, CUBLAS_TF32_TENSOR_OP_MATH (float32 GEMMs through
// TF32 tensor cores), CUBLAS_PEDANTIC_MATH, optionally with
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION.
func (b *BLAS) SetMathMode(mode Math) error {
	st, err := b.lock("SetMathMode")
	if err != nil {
		return err
	}
	defer st.life.Unlock()
	return st.life.Stream().Do("cublasSetMathMode", nil, func(libcuda.Stream) error {
		if err := SetMathMode(st.raw, mode); err != nil {
			return dl.Failed("cublas", "cublasSetMathMode", err)
		}
		return nil
	})
}

// MathMode is the handle's math mode (cublasGetMathMode).
func (b *BLAS) MathMode() (Math, error) {
	st, err := b.acquire("MathMode")
	if err != nil {
		return 0, err
	}
	defer st.life.Release()
	var m Math
	err = st.life.Do(func() error { return GetMathMode(st.raw, &m) })
	if err != nil {
		return 0, dl.Failed("cublas", "cublasGetMathMode", err)
	}
	return m, nil
}

// Close destroys the handle (cublasDestroy_v2), after the calls in
// progress have returned. Work already submitted still runs. Because
// cublasDestroy synchronizes the device, which would invalidate a capture
// in progress on another goroutine, the destroy is handed to
// sync.Postpone: it runs once no capture made through package graph (or
// cuda's Capture) is in progress, and a failure is logged. Closing twice
// is an error matching cuda.ErrClosed.
func (b *BLAS) Close() error {
	if b == nil || b.st == nil {
		return fmt.Errorf("cublas: Close on a nil BLAS: %w", cuda.ErrNil)
	}
	st := b.st
	if err := st.life.Close(func() { st.ws = cuda.Slice[byte]{} }); err != nil {
		return err
	}
	b.cleanup.Stop()
	return nil
}

// logErr logs a failure of work that has no caller to return it to.
func logErr(what string, err error) {
	slog.Error("cublas: "+what, "err", err)
}

// devPtr is a device address as the *T that cuBLAS's C prototypes take.
// The address is not Go memory; the garbage collector ignores it.
func devPtr[T any](p libcuda.Deviceptr) *T { return *(**T)(unsafe.Pointer(&p)) }
