package cuda

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/libcuda"
)

// Host is the host side of a copy:
//
//   - a plain []T inside the memory of a Pinned (Data()[a:b], say): that
//     pinned memory, as below (see Pinned, # Views); one that starts there
//     and runs past its end is refused (ErrLength).
//   - any other []T: pageable memory, copied as the driver copies it. To the
//     device, the driver stages the data and CopyToDevice returns once the
//     slice may be changed again (the copy itself may still be in flight
//     on the stream); from the device, CopyToHost waits until the data has
//     arrived in the slice (and so for the stream's earlier work). Neither
//     overlaps with the host.
//   - a *Pinned[T] (or a view of one, Pinned.Slice) or a *hostmem.Buffer:
//     pinned memory, copied asynchronously in stream order; the copy is
//     recorded as a use of the buffer, so that its release waits for it.
//     Read the data of a copy to the host after a Sync of the stream (or
//     of an Event after it). A buffer that several registrations cover
//     side by side (see hostmem's "Adjacent registrations") is copied in
//     one driver call per registration, in order on the same stream: the
//     driver refuses one call over two.
//
// Inside a Capture (or RunCached) use pinned memory: a copy to pageable
// memory waits for the stream, which a capture does not allow.
type Host[T any] interface {
	[]T | *Pinned[T] | *hostmem.Buffer
}

// hostSide is the address and size of a copy's host side, and the buffer
// to record the use on (nil for pageable memory) with the offset of p in
// it. hostOf holds the buffer (hostmem's Buffer.Hold) from before the copy
// is submitted until after its Use, so that a Free racing the submission
// waits for the copy too: the caller ends the hold (Unhold) after the Use.
type hostSide struct {
	p     unsafe.Pointer
	bytes uintptr
	buf   *hostmem.Buffer
	off   uintptr
}

// hostOf is the host side h of a copy on a stream of ctx. A []T inside
// pinned memory of ctx is that pinned memory (see Pinned, # Views).
func hostOf[T any, H Host[T]](ctx *ctxState, h H) (hostSide, error) {
	// A pointer in the interface: a slice header would be boxed.
	switch p := any(&h).(type) {
	case *[]T:
		v := *p
		hs := hostSide{p: unsafe.Pointer(unsafe.SliceData(v)), bytes: uintptr(len(v)) * unsafe.Sizeof(*new(T))}
		buf, off, partial := lookupPinned(ctx, hs.p, hs.bytes)
		switch {
		case buf != nil:
			// Freed since the lookup: pageable memory again.
			if _, err := buf.Hold(); err == nil {
				hs.buf, hs.off = buf, off
			}
		case partial:
			return hostSide{}, fmt.Errorf("the []T starts in pinned memory and runs past its end: %w", ErrLength)
		}
		return hs, nil
	case **Pinned[T]:
		v := *p
		if v == nil || v.buf == nil {
			return hostSide{}, fmt.Errorf("nil *Pinned: %w", ErrNil)
		}
		if _, err := v.buf.Hold(); err != nil {
			return hostSide{}, ErrFreed
		}
		return hostSide{p: unsafe.Pointer(unsafe.SliceData(v.data)), bytes: uintptr(len(v.data)) * unsafe.Sizeof(*new(T)), buf: v.buf, off: v.off}, nil
	case **hostmem.Buffer:
		v := *p
		if v == nil || v.Size() == 0 {
			return hostSide{}, fmt.Errorf("nil *hostmem.Buffer: %w", ErrNil)
		}
		if _, err := v.Hold(); err != nil {
			return hostSide{}, ErrFreed
		}
		return hostSide{p: v.Pointer(), bytes: uintptr(v.Size()), buf: v}, nil
	}
	return hostSide{}, fmt.Errorf("cuda: unknown host side %T", h)
}

// devSide holds a Slice for one copy: acquired, with its address.
type devSide struct {
	a     *alloc
	ptr   libcuda.Deviceptr
	bytes uintptr
}

func acquireSlice[T any](x Slice[T]) (devSide, error) {
	if x.h == nil {
		return devSide{}, fmt.Errorf("zero Slice: %w", ErrNil)
	}
	size := unsafe.Sizeof(*new(T))
	p, err := x.h.a().acquire(uintptr(x.off) * size)
	if err != nil {
		return devSide{}, err
	}
	return devSide{a: x.h.a(), ptr: p, bytes: uintptr(x.n) * size}, nil
}

// CopyToDevice copies src into dst on stream s (cuMemcpyHtoDAsync). The
// lengths must be equal (ErrLength); see Host for what each kind of host
// side means.
func CopyToDevice[T any, H Host[T]](s *Stream, dst Slice[T], src H) error {
	return copyHost[T](s, "CopyToDevice", dst, src, true)
}

// CopyToHost copies src into dst on stream s (cuMemcpyDtoHAsync). The
// lengths must be equal (ErrLength); see Host for when the data is there.
func CopyToHost[T any, H Host[T]](s *Stream, dst H, src Slice[T]) error {
	return copyHost[T](s, "CopyToHost", src, dst, false)
}

func copyHost[T any, H Host[T]](s *Stream, op string, x Slice[T], h H, toDevice bool) (err error) {
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
	ds, err := acquireSlice(x)
	if err != nil {
		return fmt.Errorf("cuda: %s: device side: %w", op, err)
	}
	copied := false
	defer func() { ds.a.release(st, copied) }()
	if hs.bytes != ds.bytes {
		return fmt.Errorf("cuda: %s: %d bytes on the host, %d on the device: %w", op, hs.bytes, ds.bytes, ErrLength)
	}
	if ds.bytes == 0 {
		return nil
	}
	access := Read
	if toDevice {
		access = Write
	}
	if err := ds.order(st, access); err != nil {
		return fmt.Errorf("cuda: %s: ordering after other streams: %w", op, err)
	}
	call := "cuMemcpyDtoHAsync"
	if toDevice {
		call = "cuMemcpyHtoDAsync"
	}
	var segErr error // the host buffer's answer, not the driver's
	err = st.ctx.do(func() error {
		for off := uintptr(0); off < ds.bytes; {
			n := ds.bytes - off
			if hs.buf != nil {
				// One call per registration the buffer spans: the
				// driver refuses a range over two (hostmem's doc,
				// "Adjacent registrations").
				seg, err := hs.buf.Segment(int(hs.off + off))
				if err != nil {
					segErr = err
					return nil
				}
				n = min(n, uintptr(seg)) // a view ends before its registration may
			}
			h, d := unsafe.Add(hs.p, off), ds.ptr+libcuda.Deviceptr(off)
			var err error
			if toDevice {
				err = libcuda.MemcpyHtoDAsync(d, h, uint64(n), st.raw)
			} else {
				err = libcuda.MemcpyDtoHAsync(h, d, uint64(n), st.raw)
			}
			if err != nil {
				return err
			}
			copied = true
			off += n
		}
		return nil
	})
	if err == nil && segErr != nil {
		if errors.Is(segErr, hostmem.ErrFreed) {
			segErr = ErrFreed
		}
		err = fmt.Errorf("cuda: %s: host side: %w", op, segErr)
	} else if err != nil {
		err = driverErr(call, err)
	}
	if hs.buf != nil {
		if copied {
			// Some segments may be on the stream even where a later one
			// failed: their release must wait for them all the same.
			if uerr := hs.buf.Use(st.raw); uerr != nil {
				uerr = fmt.Errorf("cuda: %s: recording the use of the host buffer: %w", op, uerr)
				if err == nil {
					return uerr
				}
				return errors.Join(err, uerr)
			}
		}
		return err
	}
	if err != nil {
		return err
	}
	if !toDevice {
		// Into pageable memory: the data must be there on return, whatever
		// the driver did with this memory.
		return st.syncLocked(context.Background())
	}
	return nil
}

// Copy copies src into dst on stream s, device to device
// (cuMemcpyDtoDAsync). The lengths must be equal, and two parts of one
// allocation must not overlap (ErrLength).
func Copy[T any](s *Stream, dst, src Slice[T]) error {
	st, err := s.acquire("Copy")
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	d, err := acquireSlice(dst)
	if err != nil {
		return fmt.Errorf("cuda: Copy: destination: %w", err)
	}
	copied := false
	defer func() { d.a.release(st, copied) }()
	var sr devSide
	if src.h != nil && src.h.a() == d.a {
		// One allocation: it is held already (a second read lock could
		// deadlock behind a waiting Free).
		if src.off < dst.off+dst.n && dst.off < src.off+src.n && src.n > 0 && dst.n > 0 {
			return fmt.Errorf("cuda: Copy between overlapping parts [%d:%d] and [%d:%d] of one allocation: %w", src.off, src.off+src.n, dst.off, dst.off+dst.n, ErrLength)
		}
		size := unsafe.Sizeof(*new(T))
		sr = devSide{a: d.a, ptr: d.a.ptr + libcuda.Deviceptr(uintptr(src.off)*size), bytes: uintptr(src.n) * size}
	} else {
		sr, err = acquireSlice(src)
		if err != nil {
			return fmt.Errorf("cuda: Copy: source: %w", err)
		}
		defer func() { sr.a.release(st, copied) }()
	}
	if d.bytes != sr.bytes {
		return fmt.Errorf("cuda: Copy: %d elements into %d: %w", src.n, dst.n, ErrLength)
	}
	if d.bytes == 0 {
		return nil
	}
	if err := orderCopy(st, d, sr); err != nil {
		return fmt.Errorf("cuda: Copy: ordering after other streams: %w", err)
	}
	err = st.ctx.do(func() error { return libcuda.MemcpyDtoDAsync(d.ptr, sr.ptr, uint64(d.bytes), st.raw) })
	if err != nil {
		return driverErr("cuMemcpyDtoDAsync", err)
	}
	copied = true
	return nil
}

// Memset sets every element of dst to v on stream s (cuMemsetD8Async,
// cuMemsetD16Async or cuMemsetD32Async). It works for any T whose value v
// repeats a pattern of 1, 2 or 4 bytes: every value of a type of 1, 2 or 4
// bytes, and values like 0 or -1 of larger types. Other values are an
// error; fill them with a copy or a kernel.
func Memset[T any](s *Stream, dst Slice[T], v T) error {
	size := unsafe.Sizeof(v)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&v)), size)
	for _, width := range []uintptr{1, 2, 4} {
		if size%width != 0 || !repeats(b, width) {
			continue
		}
		var word uint32
		for i := range width {
			word |= uint32(b[i]) << (8 * i)
		}
		return memset(s, "Memset", dst.h, uintptr(dst.off)*size, uintptr(dst.n)*size/width, width, word)
	}
	return fmt.Errorf("cuda: Memset: the %d-byte value does not repeat a pattern of 1, 2 or 4 bytes", size)
}

// repeats says whether b is its first width bytes over and over.
func repeats(b []byte, width uintptr) bool {
	for i := width; i < uintptr(len(b)); i++ {
		if b[i] != b[i-width] {
			return false
		}
	}
	return true
}

// Zero sets every byte of dst to 0 on stream s: with cuMemsetD32Async
// when dst's device address and byte length are multiples of 4, as a C
// program zeroes words, else with cuMemsetD16Async or cuMemsetD8Async,
// the widest that they allow.
func Zero[T any](s *Stream, dst Slice[T]) error {
	size := unsafe.Sizeof(*new(T))
	return memset(s, "Zero", dst.h, uintptr(dst.off)*size, uintptr(dst.n)*size, 0, 0)
}

// memset sets n elements of width bytes (1, 2 or 4) to word, from byte
// off of h's allocation; width 0 is Zero's: n bytes set to 0, in the
// widest elements that the address and n allow (zeroWidth).
func memset(s *Stream, op string, h *allocHandle, off, n, width uintptr, word uint32) error {
	st, err := s.acquire(op)
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	if h == nil {
		return fmt.Errorf("cuda: %s: zero Slice: %w", op, ErrNil)
	}
	p, err := h.a().acquire(off)
	if err != nil {
		return fmt.Errorf("cuda: %s: %w", op, err)
	}
	if width == 0 {
		width = zeroWidth(p, n)
		n /= width
	}
	done := false
	defer func() { h.a().release(st, done) }()
	if n == 0 {
		return nil
	}
	if err := h.a().orderUse(st, Write, off, off+n*width); err != nil {
		return fmt.Errorf("cuda: %s: ordering after other streams: %w", op, err)
	}
	call := "cuMemsetD8Async"
	err = st.ctx.do(func() error {
		switch width {
		case 2:
			call = "cuMemsetD16Async"
			return libcuda.MemsetD16Async(p, uint16(word), uint64(n), st.raw)
		case 4:
			call = "cuMemsetD32Async"
			return libcuda.MemsetD32Async(p, word, uint64(n), st.raw)
		}
		return libcuda.MemsetD8Async(p, uint8(word), uint64(n), st.raw)
	})
	if err != nil {
		return driverErr(call, err)
	}
	done = true
	return nil
}

// CopyPeer copies src into dst on stream s where the two Slices may be on
// different devices (cuMemcpyPeerAsync); the stream may be of either
// context. Peer access (Context.EnablePeerAccess) makes the copy direct;
// without it the driver stages it through the host. Both Slices record the
// stream as a user, so that each one's Free waits for the copy. Lengths
// must be equal (ErrLength).
func CopyPeer[T any](s *Stream, dst, src Slice[T]) error {
	if dst.h != nil && src.h != nil && dst.h.a() == src.h.a() {
		return Copy(s, dst, src)
	}
	st, err := s.acquire("CopyPeer")
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	d, err := acquireSlice(dst)
	if err != nil {
		return fmt.Errorf("cuda: CopyPeer: destination: %w", err)
	}
	copied := false
	defer func() { d.a.release(st, copied) }()
	sr, err := acquireSlice(src)
	if err != nil {
		return fmt.Errorf("cuda: CopyPeer: source: %w", err)
	}
	defer func() { sr.a.release(st, copied) }()
	if d.bytes != sr.bytes {
		return fmt.Errorf("cuda: CopyPeer: %d elements into %d: %w", src.n, dst.n, ErrLength)
	}
	if d.bytes == 0 {
		return nil
	}
	if st.ctx.cu != d.a.ctx.cu && st.ctx.cu != sr.a.ctx.cu {
		return fmt.Errorf("cuda: CopyPeer: the stream belongs to neither Slice's context")
	}
	if err := orderCopy(st, d, sr); err != nil {
		return fmt.Errorf("cuda: CopyPeer: ordering after other streams: %w", err)
	}
	err = st.ctx.do(func() error {
		return libcuda.MemcpyPeerAsync(d.ptr, d.a.ctx.cu, sr.ptr, sr.a.ctx.cu, uint64(d.bytes), st.raw)
	})
	if err != nil {
		return driverErr("cuMemcpyPeerAsync", err)
	}
	copied = true
	return nil
}

// zeroWidth is the widest element, of 4, 2 or 1 bytes, in which n bytes
// at device address p can be zeroed: the driver's D16 and D32 memsets
// need an address aligned to their element.
func zeroWidth(p libcuda.Deviceptr, n uintptr) uintptr {
	switch a := uintptr(p) | n; {
	case a%4 == 0:
		return 4
	case a%2 == 0:
		return 2
	}
	return 1
}

// orderCopy orders a device-to-device copy on st: a write of dst, a read
// of src (see order.go).
func orderCopy(st *streamState, dst, src devSide) error {
	if err := dst.order(st, Write); err != nil {
		return err
	}
	return src.order(st, Read)
}

// order orders a use of the side's bytes on st (see order.go).
func (d devSide) order(st *streamState, access Access) error {
	lo := uintptr(d.ptr - d.a.ptr)
	return d.a.orderUse(st, access, lo, lo+d.bytes)
}
