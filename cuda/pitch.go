package cuda

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/libcuda"
)

// Pitched is a two-dimensional view of device memory: Height rows of
// Width elements of T, each row starting Pitch bytes after the one before
// (the bytes between a row's end and the next row are padding). AllocPitch
// makes one whose rows start aligned; AsPitched views a Slice with a layout
// of one's own; Sub takes a rectangle of either. Like Slice, it is a small
// value that shares its memory.
type Pitched[T any] struct {
	x             Slice[T] // from the first element of the first row to the last of the last
	width, height int
	pitch         int // in elements
}

// pitchAlign is the row alignment AllocPitch gives, in bytes: enough for
// the widest loads and for coalesced access at the start of every row.
const pitchAlign = 512

// AllocPitch allocates height rows of width elements of T in stream order
// (as Alloc does), each row starting on a 512-byte boundary (or the next
// multiple of T's size after it), and returns them as a Pitched. Free it
// with Free (or its Slice's Free). Unlike cuMemAllocPitch, the memory comes
// from the stream-ordered pool, so the free is stream-ordered too and waits
// for no other work of the device.
func AllocPitch[T any](s *Stream, width, height int) (Pitched[T], error) {
	size := int(unsafe.Sizeof(*new(T)))
	if width < 0 || height < 0 || size == 0 {
		return Pitched[T]{}, fmt.Errorf("cuda: AllocPitch of %d×%d elements: %w", width, height, ErrLength)
	}
	pitch := 0
	if width > 0 {
		row := (width*size + pitchAlign - 1) / pitchAlign * pitchAlign
		pitch = (row + size - 1) / size
		if pitch < width || pitch > (1<<62)/size/max(height, 1) {
			return Pitched[T]{}, fmt.Errorf("cuda: AllocPitch of %d×%d elements: %w", width, height, ErrLength)
		}
	}
	x, err := Alloc[T](s, pitch*height)
	if err != nil {
		return Pitched[T]{}, fmt.Errorf("cuda: AllocPitch: %w", err)
	}
	return Pitched[T]{x: x, width: width, height: height, pitch: pitch}, nil
}

// AsPitched views x as height rows of width elements, each row pitch
// elements after the one before. x must hold them all: at least
// (height-1)*pitch + width elements (ErrLength), and pitch must be at least
// width.
func AsPitched[T any](x Slice[T], width, height, pitch int) (Pitched[T], error) {
	if x.h == nil {
		return Pitched[T]{}, fmt.Errorf("cuda: AsPitched: %w", ErrNil)
	}
	if width < 0 || height < 0 || pitch < width {
		return Pitched[T]{}, fmt.Errorf("cuda: AsPitched(%d, %d, pitch %d): %w", width, height, pitch, ErrLength)
	}
	n := 0
	if width > 0 && height > 0 {
		if width > x.n || (height > 1 && pitch > (x.n-width)/(height-1)) {
			return Pitched[T]{}, fmt.Errorf("cuda: AsPitched(%d, %d, pitch %d) of length %d: %w", width, height, pitch, x.n, ErrLength)
		}
		n = (height-1)*pitch + width
	}
	v, err := x.Slice(0, n)
	if err != nil {
		return Pitched[T]{}, err
	}
	return Pitched[T]{x: v, width: width, height: height, pitch: pitch}, nil
}

// Width is the number of elements of a row.
func (p Pitched[T]) Width() int { return p.width }

// Height is the number of rows.
func (p Pitched[T]) Height() int { return p.height }

// Pitch is the distance from the start of one row to the next, in bytes.
func (p Pitched[T]) Pitch() int { return p.pitch * int(unsafe.Sizeof(*new(T))) }

// Slice is the memory from the first element of the first row to the last
// element of the last row, padding included; for an AllocPitch, all of
// the allocation.
func (p Pitched[T]) Slice() Slice[T] { return p.x }

// Arg passes the device address of the first element (see Slice.Arg); pass
// the pitch as another argument.
func (p Pitched[T]) Arg() Arg { return p.x.Arg() }

// Free frees the memory of an AllocPitch (Slice.Free of Slice).
func (p Pitched[T]) Free() error { return p.x.Free() }

// Row is row y.
func (p Pitched[T]) Row(y int) (Slice[T], error) {
	if y < 0 || y >= p.height {
		return Slice[T]{}, fmt.Errorf("cuda: Pitched.Row(%d) of %d rows: %w", y, p.height, ErrLength)
	}
	return p.x.Slice(y*p.pitch, y*p.pitch+p.width)
}

// Sub is the rectangle of width×height elements whose first element is
// element x of row y, with the same pitch.
func (p Pitched[T]) Sub(x, y, width, height int) (Pitched[T], error) {
	if x < 0 || y < 0 || width < 0 || height < 0 || x+width > p.width || y+height > p.height {
		return Pitched[T]{}, fmt.Errorf("cuda: Pitched.Sub(%d, %d, %d, %d) of %d×%d: %w", x, y, width, height, p.width, p.height, ErrLength)
	}
	if p.x.h == nil {
		return Pitched[T]{}, fmt.Errorf("cuda: Pitched.Sub: %w", ErrNil)
	}
	n := 0
	if width > 0 && height > 0 {
		n = (height-1)*p.pitch + width
	}
	start := y*p.pitch + x
	return Pitched[T]{x: Slice[T]{h: p.x.h, off: p.x.off + start, n: n}, width: width, height: height, pitch: p.pitch}, nil
}

// Copy2D copies src into dst on stream s, row by row in one driver call
// (cuMemcpy2DAsync), device to device. Both must have the same width and
// height (ErrLength); their pitches may differ.
func Copy2D[T any](s *Stream, dst, src Pitched[T]) error {
	if dst.width != src.width || dst.height != src.height {
		return fmt.Errorf("cuda: Copy2D of %d×%d into %d×%d: %w", src.width, src.height, dst.width, dst.height, ErrLength)
	}
	st, err := s.acquire("Copy2D")
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	d, err := acquireSlice(dst.x)
	if err != nil {
		return fmt.Errorf("cuda: Copy2D: destination: %w", err)
	}
	copied := false
	defer func() { d.a.release(st, copied) }()
	sr := d
	if src.x.h == nil || src.x.h.a() != d.a {
		if sr, err = acquireSlice(src.x); err != nil {
			return fmt.Errorf("cuda: Copy2D: source: %w", err)
		}
		defer func() { sr.a.release(st, copied) }()
	} else {
		// One allocation, held already (see Copy).
		size := unsafe.Sizeof(*new(T))
		sr = devSide{a: d.a, ptr: d.a.ptr + libcuda.Deviceptr(uintptr(src.x.off)*size), bytes: uintptr(src.x.n) * size}
	}
	size := uint64(unsafe.Sizeof(*new(T)))
	if dst.width == 0 || dst.height == 0 {
		return nil
	}
	if err := orderCopy(st, d, sr); err != nil {
		return fmt.Errorf("cuda: Copy2D: ordering after other streams: %w", err)
	}
	c := libcuda.CUDA_MEMCPY2D{
		SrcMemoryType: libcuda.CU_MEMORYTYPE_DEVICE, SrcDevice: sr.ptr, SrcPitch: uint64(src.pitch) * size,
		DstMemoryType: libcuda.CU_MEMORYTYPE_DEVICE, DstDevice: d.ptr, DstPitch: uint64(dst.pitch) * size,
		WidthInBytes: uint64(dst.width) * size, Height: uint64(dst.height),
	}
	if err := st.ctx.do(func() error { return libcuda.Memcpy2DAsync(&c, st.raw) }); err != nil {
		return driverErr("cuMemcpy2DAsync", err)
	}
	copied = true
	return nil
}

// CopyToDevice2D copies the rows of src, a host matrix of dst's width and
// height stored densely (row after row, no padding), into dst on stream s
// (cuMemcpy2DAsync). src's length must be Width×Height (ErrLength); see
// Host for what each kind of host side means.
func CopyToDevice2D[T any, H Host[T]](s *Stream, dst Pitched[T], src H) error {
	return copyHost2D[T](s, "CopyToDevice2D", dst, src, true)
}

// CopyToHost2D copies the rows of src into dst, a host matrix of src's
// width and height stored densely, on stream s (cuMemcpy2DAsync); see Host
// for when the data is there.
func CopyToHost2D[T any, H Host[T]](s *Stream, dst H, src Pitched[T]) error {
	return copyHost2D[T](s, "CopyToHost2D", src, dst, false)
}

func copyHost2D[T any, H Host[T]](s *Stream, op string, p Pitched[T], h H, toDevice bool) error {
	st, err := s.acquire(op)
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	hs, err := hostOf[T](st.ctx, h)
	if err != nil {
		return fmt.Errorf("cuda: %s: host side: %w", op, err)
	}
	if hs.buf != nil {
		defer hs.buf.Unhold() // after the Use below
	}
	ds, err := acquireSlice(p.x)
	if err != nil {
		return fmt.Errorf("cuda: %s: device side: %w", op, err)
	}
	copied := false
	defer func() { ds.a.release(st, copied) }()
	size := uint64(unsafe.Sizeof(*new(T)))
	row := uint64(p.width) * size
	if uint64(hs.bytes) != row*uint64(p.height) {
		return fmt.Errorf("cuda: %s: %d bytes on the host for %d×%d elements: %w", op, hs.bytes, p.width, p.height, ErrLength)
	}
	if hs.bytes == 0 {
		return nil
	}
	access := Read
	if toDevice {
		access = Write
	}
	if err := ds.order(st, access); err != nil {
		return fmt.Errorf("cuda: %s: ordering after other streams: %w", op, err)
	}
	if hs.buf != nil {
		// One driver call covers one registration only (see Host).
		if seg, err := hs.buf.Segment(int(hs.off)); err != nil {
			if errors.Is(err, hostmem.ErrFreed) {
				err = ErrFreed
			}
			return fmt.Errorf("cuda: %s: host side: %w", op, err)
		} else if uintptr(seg) < hs.bytes {
			return fmt.Errorf("cuda: %s: the host buffer spans several registrations: copy it one row at a time", op)
		}
	}
	c := libcuda.CUDA_MEMCPY2D{WidthInBytes: row, Height: uint64(p.height)}
	if toDevice {
		c.SrcMemoryType, c.SrcHost, c.SrcPitch = libcuda.CU_MEMORYTYPE_HOST, hs.p, row
		c.DstMemoryType, c.DstDevice, c.DstPitch = libcuda.CU_MEMORYTYPE_DEVICE, ds.ptr, uint64(p.pitch)*size
	} else {
		c.SrcMemoryType, c.SrcDevice, c.SrcPitch = libcuda.CU_MEMORYTYPE_DEVICE, ds.ptr, uint64(p.pitch)*size
		c.DstMemoryType, c.DstHost, c.DstPitch = libcuda.CU_MEMORYTYPE_HOST, hs.p, row
	}
	if err := st.ctx.do(func() error { return libcuda.Memcpy2DAsync(&c, st.raw) }); err != nil {
		return driverErr("cuMemcpy2DAsync", err)
	}
	copied = true
	if hs.buf != nil {
		if err := hs.buf.Use(st.raw); err != nil {
			return fmt.Errorf("cuda: %s: recording the use of the host buffer: %w", op, err)
		}
		return nil
	}
	if !toDevice {
		return st.syncLocked(context.Background())
	}
	return nil
}
