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
	mem    *allocHandle
	off    uintptr // of the first element, in bytes
	n      uintptr // the Slice's length, in bytes
	access Access
	err    error // why the Slice cannot be passed

	ptr   libcuda.Deviceptr // while Do's f runs
	owner bool              // this operand holds its allocation for the call
}

// Operand passes the slice to a library call made with Stream.Do, read,
// written or both as access says.
func (x Slice[T]) Operand(access Access) Operand {
	if x.h == nil {
		return Operand{err: fmt.Errorf("zero Slice: %w", ErrNil)}
	}
	if access&ReadWrite == 0 || access&^ReadWrite != 0 {
		return Operand{err: fmt.Errorf("%v: not Read, Write or ReadWrite", access)}
	}
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
//     the call before f runs, with ErrNil or ErrFreed;
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
// name, the library call (e.g. "cublasSgemm_v2"), is for the error of a
// bad operand. Do allocates nothing when ops is on the caller's stack and
// f is a closure that does not escape.
func (s *Stream) Do(name string, ops []Operand, f func(raw libcuda.Stream) error) error {
	if f == nil {
		return fmt.Errorf("cuda: Stream.Do %s: nil function", name)
	}
	st, err := s.acquire("Do")
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	return st.doOperands(name, ops, f)
}

// doOperands holds the operands' memory while f runs, then records the
// uses.
func (st *streamState) doOperands(name string, ops []Operand, f func(raw libcuda.Stream) error) (err error) {
	held := 0 // ops[:held] are looked at
	ran := false
	defer func() {
		for i := range ops[:held] {
			o := &ops[i]
			o.ptr = 0
			if o.owner {
				// Every use is ordered before Free alike, reads and
				// writes: the access of the allocation's other operands
				// needs no merging here (orderUse has recorded each).
				o.owner = false
				o.mem.a.release(st, ran)
			}
		}
	}()
	for i := range ops {
		o := &ops[i]
		if o.err != nil {
			return fmt.Errorf("cuda: %s: operand %d: %w", name, i, o.err)
		}
		if o.mem == nil {
			return fmt.Errorf("cuda: %s: operand %d: zero Operand: %w", name, i, ErrNil)
		}
		first := true
		for j := range i {
			if ops[j].owner && ops[j].mem.a == o.mem.a {
				first = false
				break
			}
		}
		// The same allocation twice (A and B of one multiplication) is
		// held once, by its first operand, and recorded with both uses.
		if first {
			if _, err := o.mem.a.acquire(0); err != nil {
				return fmt.Errorf("cuda: %s: operand %d: %w", name, i, err)
			}
			o.owner = true
		}
		o.ptr = o.mem.a.ptr + libcuda.Deviceptr(o.off)
		held = i + 1
		// Ordered after other streams' conflicting uses of the Slice's
		// bytes (order.go), as a launch's arguments are.
		if err := o.mem.a.orderUse(st, o.access, o.off, o.off+o.n); err != nil {
			return fmt.Errorf("cuda: %s: operand %d: ordering after other streams: %w", name, i, err)
		}
	}
	prev, err := st.ctx.enter()
	if err != nil {
		return err
	}
	ran = true
	err = f(st.raw)
	return errors.Join(err, st.ctx.leave(prev))
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
