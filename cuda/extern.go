package cuda

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
)

// This file is what packages built on package cuda (cublas, cublaslt and
// the like) use to call their library on a Stream with Slices: Stream.Do
// for each call, and ContextHold for the values such a library makes (a
// handle) that must outlive the Stream and the Context they were made on.

// Access says how a library call uses a Slice it is given: it reads the
// memory, writes it, or both. The stream that ran the call is recorded as
// a reader or a writer of the memory accordingly.
type Access uint8

const (
	// Read: the call only reads the memory.
	Read Access = 1 << iota
	// Write: the call writes the memory (and may read it).
	Write
	// ReadWrite: the call reads and writes the memory (as C in
	// C = alpha*A*B + beta*C).
	ReadWrite = Read | Write
)

// String is "read", "write" or "read-write".
func (a Access) String() string {
	switch a {
	case Read:
		return "read"
	case Write:
		return "write"
	case ReadWrite:
		return "read-write"
	}
	return fmt.Sprintf("Access(%d)", uint8(a))
}

// Operand is a Slice passed to a library call made through Stream.Do,
// with how the call uses it (Slice.Operand). It is a plain value: keep
// the operands of a call in an array on the stack and pass a slice of it.
type Operand struct {
	mem    *allocHandle      // nil for the zero Slice (refused by Do)
	off    uintptr           // of the first element, in bytes
	n      uintptr           // the Slice's length, in bytes
	ptr    libcuda.Deviceptr // while Do's f runs
	access Access            // checked by Do
}

// Operand passes the slice to a library call made with Stream.Do, read,
// written or both as access says. Do refuses the operand of a zero Slice
// (ErrNil) and an access that is not Read, Write or ReadWrite.
func (x Slice[T]) Operand(access Access) Operand {
	size := unsafe.Sizeof(*new(T))
	return Operand{mem: x.h, off: uintptr(x.off) * size, n: uintptr(x.n) * size, access: access}
}

// Ptr is the device address of the operand's first element while the
// function given to Stream.Do runs, and 0 before and after.
func (o *Operand) Ptr() libcuda.Deviceptr { return o.ptr }

// Access is how the call uses the operand.
func (o *Operand) Access() Access { return o.access }

// Do runs f, a call into a library that submits work to the stream, under
// the rules of a kernel launch:
//
//   - the stream is held open during f (a Close waits for it), and its
//     context is current on a locked OS thread (as Context's # Threads
//     says);
//   - each operand's memory is held against Free during f, and
//     ops[i].Ptr() gives its device address; a zero or freed Slice fails
//     the call before f runs, with ErrNil or ErrFreed, and so does an
//     access that is not Read, Write or ReadWrite;
//   - f's work must touch only the operands' own elements (a Slice of
//     part of an allocation is ordered after other streams' uses of that
//     part alone, not of the rest);
//   - once f has run, the stream is recorded as a user of every operand,
//     with its Access, as a launch records the Slices it passes, so that
//     Free is ordered after the work. It is recorded even when f fails,
//     since a library call that fails may have submitted part of its work.
//
// raw is the driver's handle of the stream; do not destroy it. f must not
// keep the addresses after it returns, nor use them on another stream:
// the memory is only known to be in use by this one. Library work that
// captures (inside Stream.Capture) follows the same rules as a launch
// there: the memory must outlive the graph's launches.
//
// When f panics, the holds end and the thread's context is restored
// before the panic goes on.
//
// name, the library call (e.g. "cublasSgemm_v2"), is for the error of a
// bad operand. Do allocates nothing when ops is on the caller's stack and
// f is a closure that does not escape.
func (s *Stream) Do(name string, ops []Operand, f func(raw libcuda.Stream) error) (err error) {
	if f == nil {
		return fmt.Errorf("cuda: Stream.Do %s: nil function", name)
	}
	// The operands' allocations are read first, before the first locked
	// instruction, so that their cache misses overlap.
	for i := range ops {
		o := &ops[i]
		if o.mem == nil || o.access&ReadWrite == 0 || o.access&^ReadWrite != 0 {
			clearPtrs(ops[:i])
			return operandErr(name, i, o)
		}
		o.ptr = o.mem.a().ptr + libcuda.Deviceptr(o.off)
	}
	st, err := s.acquire("Do")
	if err != nil {
		clearPtrs(ops)
		return err
	}
	held := 0 // ops[:held] hold their allocations
	ran := false
	entered := false // the context is entered and not left yet
	var prev libcuda.Context
	// One defer, open-coded: it ends every hold, also when f panics (and
	// then leaves the context, which the return below does otherwise).
	defer func() {
		if entered {
			_ = st.leave(prev) // f panicked: the panic goes on
		}
		for i := range ops {
			o := &ops[i]
			o.ptr = 0
			if i < held {
				// Every use is ordered before Free alike, reads and
				// writes: the ordering has recorded each operand's
				// access. A solo stream is among those used already.
				// (alloc.release, written out: it does not inline.)
				m := o.mem.a()
				if ran && m.solo.Load() != st {
					m.noteUse(st)
				}
				m.mu.RUnlock()
			}
		}
		st.mu.RUnlock()
	}()
	for i := range ops {
		o := &ops[i]
		m := o.mem.a()
		// Each operand holds its allocation (A and B of one
		// multiplication hold theirs twice); a read hold is never waited
		// for: a writer is a Free. (A Free that comes between two holds
		// of one allocation fails the second: Do returns ErrFreed, as if
		// the Free had come first, and the Free goes on once Do ends.)
		if !m.mu.TryRLock() {
			return freedOperand(name, i)
		}
		held = i + 1
		if m.freed {
			return freedOperand(name, i)
		}
		// Ordered after other streams' conflicting uses of the Slice's
		// bytes (orderUse), as a launch's arguments are; one load when the
		// allocation is this stream's alone.
		if m.solo.Load() != st && !st.unordered && m.bytes != 0 {
			if err := m.orderSlow(st, o.access, o.off, o.off+o.n); err != nil {
				return fmt.Errorf("cuda: %s: operand %d: ordering after other streams: %w", name, i, err)
			}
		}
	}
	if prev, err = st.enter(); err != nil {
		return err
	}
	ran, entered = true, true
	err = f(st.raw)
	entered = false
	if lerr := st.leave(prev); lerr != nil {
		err = errors.Join(err, lerr)
	}
	return err
}

//go:noinline
func freedOperand(name string, i int) error {
	return fmt.Errorf("cuda: %s: operand %d: %w", name, i, ErrFreed)
}

// operandErr is why Do refuses operand i.
//
//go:noinline
func operandErr(name string, i int, o *Operand) error {
	if o.mem == nil {
		return fmt.Errorf("cuda: %s: operand %d: zero Operand or Slice: %w", name, i, ErrNil)
	}
	return fmt.Errorf("cuda: %s: operand %d: %v: not Read, Write or ReadWrite", name, i, o.access)
}

// clearPtrs makes the operands' Ptr 0 again.
func clearPtrs(ops []Operand) {
	for i := range ops {
		ops[i].ptr = 0
	}
}

// ContextHold keeps a stream's context alive for a value that a library
// built on package cuda makes on the stream (a cuBLAS handle): as an open
// Stream does, it keeps the driver's context retained after the Context
// and the Stream are closed, until Release. Do runs functions with that
// context current meanwhile (to destroy the handle, say).
//
// A ContextHold's methods are safe for concurrent use.
type ContextHold struct {
	st       *ctxState
	released atomic.Bool
}

// HoldContext holds the stream's context (see ContextHold). The stream
// must be open.
func (s *Stream) HoldContext() (*ContextHold, error) {
	st, err := s.acquire("HoldContext")
	if err != nil {
		return nil, err
	}
	defer st.mu.RUnlock()
	st.ctx.ref() // the open stream counts already
	return &ContextHold{st: st.ctx}, nil
}

// Do runs f on a locked OS thread with the held context current, and
// makes current again what the thread had before. After Release it fails
// with ErrClosed.
func (h *ContextHold) Do(f func() error) error {
	if h == nil || h.st == nil {
		return nilErr("ContextHold", "Do")
	}
	if f == nil {
		return errors.New("cuda: ContextHold.Do: nil function")
	}
	if h.released.Load() {
		return closedErr("ContextHold", "Do")
	}
	return h.st.do(f)
}

// Release drops the hold; the last hold of a context releases it. A second
// Release is an error matching ErrClosed. The caller must not call Do
// concurrently with Release.
func (h *ContextHold) Release() error {
	if h == nil || h.st == nil {
		return nilErr("ContextHold", "Release")
	}
	if h.released.Swap(true) {
		return closedErr("ContextHold", "Release")
	}
	return h.st.unref()
}
