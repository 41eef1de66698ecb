package cuda

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/purecuda/purecuda/hostmem"
)

// Pinned is Go memory of n elements of T pinned for the GPU (registered
// with the driver through hostmem.Wrap): copies to and from it are
// asynchronous, and kernels can read and write it through its device
// address (Arg). Data is an ordinary Go slice that stays valid after Free;
// only the pinning ends, once the GPU work that used it is done.
//
// # Views
//
// Slice(i, j) is a view of elements i to j-1, a *Pinned of its own that
// shares the pinning: copies to and from it are asynchronous and recorded
// on the pinned memory, so that Free waits for them. A plain []T that lies
// inside the memory of a Pinned made by Pin or AllocPinned in the stream's
// context (such as Data()[a:b]) is taken for that pinned memory by the
// copies, looked up by address: it is copied asynchronously and its use
// recorded the same way, instead of being copied as pageable memory while
// Free unpins it. Read the data of a copy to the host after a Sync, as for
// any pinned memory.
type Pinned[T any] struct {
	buf  *hostmem.Buffer
	data []T
	off  uintptr // of data[0] in buf, in bytes
	view bool    // made by Slice or PinnedFrom: Free refuses it
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
	addPinned(cst, b)
	return &Pinned[T]{buf: b, data: s}, nil
}

// PinnedFrom views the memory of a hostmem.Buffer (from hostmem.Wrap or
// hostmem.Alloc) as elements of T, so that it can be sliced (Slice) and
// used wherever a *Pinned is. The Buffer's size must be a multiple of T's
// and its address aligned for T. The view's Free is refused: free the
// Buffer. A []T inside such a Buffer is not looked up by the copies; pass
// the view.
func PinnedFrom[T any](b *hostmem.Buffer) (*Pinned[T], error) {
	if b == nil || b.Size() == 0 {
		return nil, fmt.Errorf("cuda: PinnedFrom: nil hostmem.Buffer: %w", ErrNil)
	}
	if err := checkElem(reflect.TypeFor[T]()); err != nil {
		return nil, fmt.Errorf("cuda: PinnedFrom: %w", err)
	}
	size := unsafe.Sizeof(*new(T))
	if uintptr(b.Size())%size != 0 || uintptr(b.Pointer())%unsafe.Alignof(*new(T)) != 0 {
		return nil, fmt.Errorf("cuda: PinnedFrom: a Buffer of %d bytes at %#x does not hold elements of %v: %w", b.Size(), uintptr(b.Pointer()), reflect.TypeFor[T](), ErrLength)
	}
	if b.DevicePtr() == 0 {
		return nil, fmt.Errorf("cuda: PinnedFrom: %w", ErrFreed)
	}
	data := unsafe.Slice((*T)(b.Pointer()), uintptr(b.Size())/size)
	return &Pinned[T]{buf: b, data: data, view: true}, nil
}

// Slice returns a view of elements i to j-1, as the Go expression
// Data()[i:j] does, that copies and launches take as pinned memory (see
// Views). An out-of-range or inverted pair is an error matching
// ErrLength; an empty view is an error too, since no copy can use it.
// The view's Free is refused: free the Pinned it was made from.
func (p *Pinned[T]) Slice(i, j int) (*Pinned[T], error) {
	if p == nil || p.buf == nil {
		return nil, fmt.Errorf("cuda: Pinned.Slice on a nil Pinned: %w", ErrNil)
	}
	if i < 0 || j <= i || j > len(p.data) {
		return nil, fmt.Errorf("cuda: Pinned.Slice(%d, %d) of length %d: %w", i, j, len(p.data), ErrLength)
	}
	size := unsafe.Sizeof(*new(T))
	return &Pinned[T]{buf: p.buf, data: p.data[i:j:j], off: p.off + uintptr(i)*size, view: true}, nil
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

// Arg passes the device address of the pinned memory (of a view's first
// element) to a kernel, which reads and writes the host memory itself
// (zero copy); the launch is recorded as a use of the buffer.
func (p *Pinned[T]) Arg() Arg {
	a := Buffer(p.Buffer())
	if a.argErr() == nil {
		a.code = codeMem + uint8(classOf(reflect.TypeFor[T]()))
		a.words[0] = uint64(p.off)
	}
	return a
}

// Free unpins the memory once the GPU work that used it is done
// (hostmem.Buffer.Free), the copies through its views and through []T
// inside it included; Data stays valid. Later copies or launches with it
// or its views are errors matching ErrFreed, and a []T inside it is
// pageable memory again. Free of a view is refused.
func (p *Pinned[T]) Free() error {
	if p == nil || p.buf == nil {
		return fmt.Errorf("cuda: Pinned.Free on a nil Pinned: %w", ErrNil)
	}
	if p.view {
		return fmt.Errorf("cuda: Pinned.Free of a view: free the Pinned (or hostmem.Buffer) it was made from")
	}
	removePinned(p.buf)
	return p.buf.Free()
}
