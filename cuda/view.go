package cuda

import (
	"errors"
	"fmt"
	"reflect"
)

// ErrAlign is matched by the error of View, ViewAt and Foreign when an
// offset or an address does not suit the element type: a view's first
// byte must lie a whole number of its elements from the start of the
// allocation, and a device address must be aligned for the type.
var ErrAlign = errors.New("cuda: misaligned offset or address")

// View returns the memory of x as elements of U: a Slice[U] of x.Bytes()
// bytes, sharing x's allocation, its lifetime (Free of either frees both;
// the memory stays allocated while either is reachable), the ordering of
// its uses across streams and the record of the streams that used it
// (see Slice). It is an error matching ErrLength when x's bytes are not a
// whole number of U, ErrAlign when x does not begin a whole number of U
// from the start of its allocation, ErrElemType when U cannot live in
// device memory, ErrNil for the zero Slice and ErrFreed after Free.
//
// A mixed-type arena allocates bytes once and carves typed views out of
// them with ViewAt.
func View[U, T any](x Slice[T]) (Slice[U], error) {
	return viewAt[U](x, 0, -1, "View")
}

// ViewAt returns n elements of U that begin byteOff bytes into x, sharing
// x's allocation as View does: the way to carve one allocation (an arena
// of bytes, say) into Slices of several types. The range must lie within
// x (ErrLength), and begin a whole number of U from the start of the
// allocation (ErrAlign): with an allocation's start aligned to 256 bytes,
// an offset that is a multiple of U's size (or of 256) does.
func ViewAt[U, T any](x Slice[T], byteOff, n int) (Slice[U], error) {
	if n < 0 {
		return Slice[U]{}, fmt.Errorf("cuda: ViewAt of %d elements: %w", n, ErrLength)
	}
	return viewAt[U](x, byteOff, n, "ViewAt")
}

// viewAt is ViewAt; n < 0 is all of x's bytes from byteOff (View).
func viewAt[U, T any](x Slice[T], byteOff, n int, op string) (Slice[U], error) {
	ut := reflect.TypeFor[U]()
	if err := checkElem(ut); err != nil {
		return Slice[U]{}, fmt.Errorf("cuda: %s: %w", op, err)
	}
	if x.h == nil {
		return Slice[U]{}, fmt.Errorf("cuda: %s of a zero Slice: %w", op, ErrNil)
	}
	a := x.h.a()
	if !a.mu.TryRLock() { // a Free in progress
		return Slice[U]{}, fmt.Errorf("cuda: %s: %w", op, ErrFreed)
	}
	freed := a.freed
	a.mu.RUnlock()
	if freed {
		return Slice[U]{}, fmt.Errorf("cuda: %s: %w", op, ErrFreed)
	}
	usize, tsize := int(ut.Size()), int(reflect.TypeFor[T]().Size())
	bytes := x.n * tsize
	if byteOff < 0 || byteOff > bytes {
		return Slice[U]{}, fmt.Errorf("cuda: %s at byte %d of a Slice of %d bytes: %w", op, byteOff, bytes, ErrLength)
	}
	if n < 0 {
		if (bytes-byteOff)%usize != 0 {
			return Slice[U]{}, fmt.Errorf("cuda: %s of %d bytes as %v (%d bytes each): %w", op, bytes-byteOff, ut, usize, ErrLength)
		}
		n = (bytes - byteOff) / usize
	} else if n > (bytes-byteOff)/usize {
		return Slice[U]{}, fmt.Errorf("cuda: %s of %d elements of %v at byte %d of a Slice of %d bytes: %w", op, n, ut, byteOff, bytes, ErrLength)
	}
	start := uintptr(x.off)*uintptr(tsize) + uintptr(byteOff) // from the allocation's start
	if start%uintptr(usize) != 0 || (uintptr(a.ptr)+start)%uintptr(ut.Align()) != 0 {
		return Slice[U]{}, fmt.Errorf("cuda: %s of %v at byte %d of its allocation (address %#x): %w", op, ut, start, uint64(a.ptr)+uint64(start), ErrAlign)
	}
	h := &allocHandle{shared: a, parent: x.h.root(), class: classOf(ut)}
	return Slice[U]{h: h, off: int(start / uintptr(usize)), n: n}, nil
}
