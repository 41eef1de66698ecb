package cuda

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
)

// Struct passes a C struct by value whose fields are the given arguments,
// in order, laid out as C lays them out: each field at the next multiple
// of its alignment (a number's is its size, a Value's its Go type's, device
// memory's 8), the whole padded to a multiple of the largest. The memory
// fields (Slice.Arg, Pinned.Arg, Buffer) are recorded as used by the
// launch, as arguments of their own are: Free waits for the kernel.
//
//	// struct Vecs { const float *a, *b; float *c; int n; };
//	// __global__ void add_vecs(Vecs v);
//	err := s.Launch(addVecs, grid, block, cuda.Struct(a.Arg(), b.Arg(), c.Arg(), cuda.Int32(n)))
//
// The struct is checked against the parameter's size, and for a C++
// kernel against its type: a Struct goes only where the kernel takes a
// class type by value. Fields may not be Structs themselves; a launch's
// Structs take at most 256 bytes together. Making a Struct allocates
// (its layout), launching it does not.
func Struct(fields ...Arg) Arg {
	sm := &structMem{}
	offs := make([]int, len(fields))
	off, align := 0, 1
	for i := range fields {
		f := &fields[i]
		if err := f.argErr(); err != nil {
			return errArg(fmt.Errorf("Struct field %d: %w", i, err))
		}
		if f.code == codeStruct {
			return errArg(fmt.Errorf("Struct field %d is a Struct: nest the Go struct in a Value instead: %w", i, ErrArgs))
		}
		a := int(f.align)
		if a == 0 {
			a = int(f.size) // a number made by Int32, Float64 and the like
		}
		if a <= 0 || a&(a-1) != 0 || a > 16 {
			return errArg(fmt.Errorf("Struct field %d: no C alignment for %d bytes: %w", i, f.size, ErrArgs))
		}
		off = (off + a - 1) / a * a
		offs[i] = off
		if m := f.mem(); m != nil {
			sm.ptrs = append(sm.ptrs, structPtr{off: off, mem: m, memOff: uintptr(f.words[0])})
			if !slicesContain(sm.mems, m) {
				sm.mems = append(sm.mems, m)
			}
		}
		off += int(f.size)
		align = max(align, a)
	}
	size := (off + align - 1) / align * align
	if size == 0 {
		return errArg(fmt.Errorf("empty Struct: %w", ErrArgs))
	}
	if size > maxStructBytes {
		return errArg(fmt.Errorf("a Struct of %d bytes, at most %d: %w", size, maxStructBytes, ErrArgs))
	}
	sm.tmpl = make([]byte, size)
	for i := range fields {
		f := &fields[i]
		switch {
		case f.mem() != nil: // its address is written at launch
		case f.big() != nil:
			copy(sm.tmpl[offs[i]:], f.big())
		default:
			copy(sm.tmpl[offs[i]:], unsafe.Slice((*byte)(unsafe.Pointer(&f.words)), f.size))
		}
	}
	return Arg{ref: sm, size: uint32(size), align: uint8(align), code: codeStruct}
}

// maxStructBytes bounds the Structs of one launch, which are laid out on
// the launching goroutine's stack (launchArgs).
const maxStructBytes = 256

func slicesContain(ms []argMem, m argMem) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// structMem is a Struct's layout: its bytes with the memory fields zero,
// and where each memory field's device address goes. It is immutable once
// made, so that one Struct may be launched from several goroutines.
type structMem struct {
	tmpl []byte
	ptrs []structPtr
	mems []argMem // each memory once
}

type structPtr struct {
	off    int     // in the struct
	mem    argMem  // whose device address goes there
	memOff uintptr // the byte offset within it (a sub-slice's)
}

// acquire holds each memory of the struct, or none.
func (sm *structMem) acquire() error {
	for i, m := range sm.mems {
		if err := m.acquire(); err != nil {
			for _, h := range sm.mems[:i] {
				_ = h.done(nil, false) // not launched: records nothing, cannot fail
			}
			return err
		}
	}
	return nil
}

// addr is not used: a Struct is passed by value (lay).
func (sm *structMem) addr(uintptr) libcuda.Deviceptr { return 0 }

func (sm *structMem) done(st *streamState, launched bool) error {
	var errs []error
	for _, m := range sm.mems {
		if err := m.done(st, launched); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// lay writes the struct, with its memory fields' addresses, into the
// launch's room for Structs, of which *used words are taken, and returns
// where it is. Between acquire and done.
func (sm *structMem) lay(structs []uint64, used *int) (unsafe.Pointer, error) {
	words := (len(sm.tmpl) + 7) / 8
	if *used+words > len(structs) {
		return nil, fmt.Errorf("the launch's Structs take more than %d bytes: %w", maxStructBytes, ErrArgs)
	}
	w := structs[*used : *used+words]
	*used += words
	b := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(sm.tmpl))
	copy(b, sm.tmpl)
	for _, p := range sm.ptrs {
		*(*uint64)(unsafe.Pointer(&b[p.off])) = uint64(p.mem.addr(p.memOff))
	}
	return unsafe.Pointer(&w[0]), nil
}
