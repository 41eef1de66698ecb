package cuda

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Foreign returns n elements of T at the device address ptr, memory that
// package cuda did not allocate (another library's, a DLPack tensor's, a
// pointer from libcuda.MemAlloc), as a Slice of the context: its uses are
// recorded and ordered across streams as those of Alloc's Slices are (see
// Slice), and its Free, after the work of every stream that used it has
// finished, calls release (on a goroutine of this package, once, and not
// while captures made through package graph are in progress, so that a
// release that frees the memory through the driver breaks none). A nil
// release leaves the memory to its owner; an owner that must stay alive
// until then is kept so by a release that refers to it. A Foreign Slice
// dropped without Free is released the same way by the garbage collector,
// and a warning is logged. release's error is logged.
//
// The memory must lie in one allocation of the context's device, as the
// driver says (cuPointerGetAttribute: the device and the range of the
// allocation that holds ptr), and ptr must be aligned for T: else the
// error matches ErrLength (the range), ErrAlign (the alignment) or
// ErrInvalidValue (an address the driver does not know). A nil Context or
// a zero ptr is an error matching ErrNil, and n must be at least 1
// (ErrLength).
//
// Work that the other library submitted on its own streams is not known:
// order it before the first use here (an Event, or a Sync), as its owner
// must order what it does after Free (release is the moment).
func Foreign[T any](ctx *Context, ptr libcuda.Deviceptr, n int, release func() error) (Slice[T], error) {
	t := reflect.TypeFor[T]()
	if err := checkElem(t); err != nil {
		return Slice[T]{}, fmt.Errorf("cuda: Foreign: %w", err)
	}
	size := t.Size()
	if n <= 0 || uint64(n) > uint64(^uintptr(0))/uint64(size) {
		return Slice[T]{}, fmt.Errorf("cuda: Foreign of %d elements of %v: %w", n, t, ErrLength)
	}
	if ptr == 0 {
		return Slice[T]{}, fmt.Errorf("cuda: Foreign at address 0: %w", ErrNil)
	}
	if uintptr(ptr)%uintptr(t.Align()) != 0 {
		return Slice[T]{}, fmt.Errorf("cuda: Foreign of %v at %#x: %w", t, uint64(ptr), ErrAlign)
	}
	st, err := ctx.hold("Foreign")
	if err != nil {
		return Slice[T]{}, err
	}
	bytes := uintptr(n) * size
	var (
		ordinal   int32
		start     libcuda.Deviceptr
		rangeSize uint64
	)
	err = st.do(func() error {
		for _, q := range []struct {
			attr libcuda.Pointer_attribute
			p    unsafe.Pointer
		}{
			{libcuda.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, unsafe.Pointer(&ordinal)},
			{libcuda.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, unsafe.Pointer(&start)},
			{libcuda.CU_POINTER_ATTRIBUTE_RANGE_SIZE, unsafe.Pointer(&rangeSize)},
		} {
			if err := libcuda.PointerGetAttribute(q.p, q.attr, ptr); err != nil {
				return driverErr("cuPointerGetAttribute", err)
			}
		}
		return nil
	})
	switch {
	case err != nil:
		st.drop()
		return Slice[T]{}, fmt.Errorf("cuda: Foreign at %#x: %w", uint64(ptr), err)
	case int(ordinal) != st.dev.ordinal:
		st.drop()
		return Slice[T]{}, fmt.Errorf("cuda: Foreign at %#x: the memory is on device %d, the context on device %d: %w", uint64(ptr), ordinal, st.dev.ordinal, ErrInvalidValue)
	case ptr < start || uint64(ptr-start)+uint64(bytes) > rangeSize:
		st.drop()
		return Slice[T]{}, fmt.Errorf("cuda: Foreign of %d bytes at %#x: the allocation holding it is [%#x, %#x): %w",
			bytes, uint64(ptr), uint64(start), uint64(start)+rangeSize, ErrLength)
	}
	h := &allocHandle{class: classOf(t), fin: true}
	a := &h.own
	a.ctx, a.ptr, a.bytes, a.foreign, a.relFn = st, ptr, bytes, true, release
	runtime.SetFinalizer(h, finalizeAlloc)
	return Slice[T]{h: h, n: n}, nil
}

// releaseForeign calls a Foreign Slice's release after the work of the
// streams in used: an event of each now, and on a goroutine a wait for
// them, then release, postponed while captures are in progress (as
// freeManaged does for cuMemFree).
func (a *alloc) releaseForeign(used []*streamState) error {
	marks := make([]mark, 0, len(used))
	for _, u := range used {
		m, err := u.mark()
		if err != nil {
			dropMarks(marks)
			return err // not released: the GPU may still use the memory
		}
		marks = append(marks, m)
	}
	go func() {
		for _, m := range marks {
			if err := sync.Event(context.Background(), m.ev); err != nil {
				logErr("waiting for the users of a Foreign Slice; it is not released", err)
				dropMarks(marks)
				return
			}
		}
		dropMarks(marks)
		done := func() {
			if a.relFn != nil {
				if err := a.relFn(); err != nil {
					logErr("releasing a Foreign Slice", err)
				}
			}
			a.ctx.drop()
		}
		if ran, _ := sync.IfNoCapture(func() error { done(); return nil }); !ran {
			sync.Postpone(done)
		}
	}()
	return nil
}
