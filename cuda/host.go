package cuda

import (
	"fmt"
	"reflect"

	"github.com/purecuda/purecuda/hostmem"
)

// Pinned is Go memory of n elements of T pinned for the GPU (registered
// with the driver through hostmem.Wrap): copies to and from it are
// asynchronous, and kernels can read and write it through its device
// address (Arg). Data is an ordinary Go slice that stays valid after Free;
// only the pinning ends, once the GPU work that used it is done.
type Pinned[T any] struct {
	buf  *hostmem.Buffer
	data []T
}

// AllocPinned makes a Go slice of n zero elements and pins it.
func AllocPinned[T any](ctx *Context, n int) (*Pinned[T], error) {
	if n <= 0 {
		return nil, fmt.Errorf("cuda: AllocPinned of %d elements: %w", n, ErrLength)
	}
	if err := checkElem(reflect.TypeFor[T]()); err != nil {
		return nil, fmt.Errorf("cuda: AllocPinned: %w", err)
	}
	return Pin(ctx, make([]T, n))
}

// Pin pins the memory of s (hostmem.Wrap). Keep using s from Go as usual,
// in the order the program's synchronization allows with the GPU's work.
func Pin[T any](ctx *Context, s []T) (*Pinned[T], error) {
	cst, err := ctx.hold("Pin")
	if err != nil {
		return nil, err
	}
	defer cst.drop()
	if len(s) == 0 {
		return nil, fmt.Errorf("cuda: Pin of an empty slice: %w", ErrLength)
	}
	if err := checkElem(reflect.TypeFor[T]()); err != nil {
		return nil, fmt.Errorf("cuda: Pin: %w", err)
	}
	b, err := hostmem.Wrap(cst.cu, s)
	if err != nil {
		return nil, cst.check(fmt.Errorf("cuda: Pin: %w", err))
	}
	return &Pinned[T]{buf: b, data: s}, nil
}

// Data is the pinned Go slice.
func (p *Pinned[T]) Data() []T {
	if p == nil || p.buf == nil {
		return nil
	}
	return p.data
}

// Len is the number of elements.
func (p *Pinned[T]) Len() int { return len(p.Data()) }

// Buffer is the hostmem.Buffer that pins the memory.
func (p *Pinned[T]) Buffer() *hostmem.Buffer {
	if p == nil || p.buf == nil {
		return nil
	}
	return p.buf
}

// Arg passes the device address of the pinned memory to a kernel, which
// reads and writes the host memory itself (zero copy); the launch is
// recorded as a use of the buffer.
func (p *Pinned[T]) Arg() Arg {
	a := Buffer(p.Buffer())
	if a.err == nil {
		a.code = codeMem + uint8(classOf(reflect.TypeFor[T]()))
	}
	return a
}

// Free unpins the memory once the GPU work that used it is done
// (hostmem.Buffer.Free); Data stays valid. Later copies or launches with
// it are errors matching ErrFreed.
func (p *Pinned[T]) Free() error {
	if p == nil || p.buf == nil {
		return fmt.Errorf("cuda: Pinned.Free on a nil Pinned: %w", ErrNil)
	}
	return p.buf.Free()
}
