package cuda

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Managed is managed (unified) memory of n elements of T: one allocation
// that both the host, through Data, and kernels, through Slice or Arg,
// use, with the driver moving its pages where they are touched (or where
// Prefetch sends them). It is what Grace Hopper programs use, where the
// GPU reads host memory at full speed.
//
// # Memory
//
// Data is not Go memory: it is the driver's mapping, as a slice from
// unix.Mmap is the kernel's. It stays valid until Free; using it after
// Free faults (the process crashes), so drop every reference to Data
// before Free. Everything else after Free (a copy, a launch, a prefetch,
// a second Free) is an error matching ErrFreed. Read or write Data only
// when the GPU work that uses the memory has finished (a Sync of its
// stream); on a device without concurrent managed access
// (Device.ConcurrentManagedAccess), the host must not touch it while any
// kernel of the context runs at all.
//
// Free waits, in the background, for the work of every stream that used
// the memory, then frees it (cuMemFree, which waits for the whole
// device): it does not block the caller.
type Managed[T any] struct {
	x          Slice[T]
	data       []T
	concurrent bool // the device has concurrent managed access
}

// Attach says which streams may use managed memory at first
// (cuMemAllocManaged's flags).
type Attach = libcuda.MemAttach_flags

const (
	// AttachGlobal: any stream on any device may use the memory.
	AttachGlobal Attach = libcuda.CU_MEM_ATTACH_GLOBAL
	// AttachHost: the memory is the host's until a stream is attached to
	// it (Stream.Attach).
	AttachHost Attach = libcuda.CU_MEM_ATTACH_HOST
)

// AllocManaged allocates n elements of T of managed memory in the context
// (cuMemAllocManaged), zeroed by the driver where it zeroes, not
// otherwise: initialize it through Data. It is refused on a device without
// managed memory (Device.ManagedMemory). Keep it well under the device's
// memory: oversubscribing managed memory makes the driver page.
func AllocManaged[T any](ctx *Context, n int, attach Attach) (*Managed[T], error) {
	t := reflect.TypeFor[T]()
	if err := checkElem(t); err != nil {
		return nil, fmt.Errorf("cuda: AllocManaged: %w", err)
	}
	size := t.Size()
	if n <= 0 || uint64(n) > uint64(^uintptr(0))/uint64(size) {
		return nil, fmt.Errorf("cuda: AllocManaged of %d elements of %v: %w", n, t, ErrLength)
	}
	if attach != AttachGlobal && attach != AttachHost {
		return nil, fmt.Errorf("cuda: AllocManaged: attach %d is neither AttachGlobal nor AttachHost", attach)
	}
	cst, err := ctx.hold("AllocManaged")
	if err != nil {
		return nil, err
	}
	defer cst.drop()
	if ok, err := cst.dev.ManagedMemory(); err != nil {
		return nil, fmt.Errorf("cuda: AllocManaged: %w", err)
	} else if !ok {
		return nil, fmt.Errorf("cuda: AllocManaged: device %d has no managed memory: %w", cst.dev.ordinal, ErrNotSupported)
	}
	concurrent, err := cst.dev.ConcurrentManagedAccess()
	if err != nil {
		return nil, fmt.Errorf("cuda: AllocManaged: %w", err)
	}
	bytes := uintptr(n) * size
	var p libcuda.Deviceptr
	if err := cst.do(func() error { return libcuda.MemAllocManaged(&p, uint64(bytes), uint32(attach)) }); err != nil {
		return nil, driverErr("cuMemAllocManaged", err)
	}
	cst.ref()
	a := &alloc{ctx: cst, ptr: p, bytes: bytes, managed: true}
	h := &allocHandle{shared: a, class: classOf(t)}
	h.cleanup = runtime.AddCleanup(h, func(a *alloc) {
		dropped("Managed", "Free")
		if err := a.free(); err != nil && !errors.Is(err, ErrFreed) {
			logErr("freeing a dropped Managed", err)
		}
	}, a)
	// The address is the driver's mapping, not Go memory: the garbage
	// collector ignores it.
	data := unsafe.Slice((*T)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)
	return &Managed[T]{x: Slice[T]{h: h, n: n}, data: data, concurrent: concurrent}, nil
}

// Data is the memory as a host slice; see # Memory for when it may be
// used. It is nil for a nil Managed.
func (m *Managed[T]) Data() []T {
	if m == nil {
		return nil
	}
	return m.data
}

// Len is the number of elements.
func (m *Managed[T]) Len() int { return len(m.Data()) }

// Slice is the memory as device memory, for copies, memsets and launches;
// its uses are remembered for Free as any Slice's. Do not Free it: Free the
// Managed.
func (m *Managed[T]) Slice() Slice[T] {
	if m == nil {
		return Slice[T]{}
	}
	return m.x
}

// Arg passes the memory's address to a kernel (Slice().Arg()).
func (m *Managed[T]) Arg() Arg { return m.Slice().Arg() }

// Location is where managed memory's pages are to be: the host, or a
// device.
type Location struct {
	host bool
	dev  Device
}

// OnHost is the host's memory.
func OnHost() Location { return Location{host: true} }

// OnDevice is device d's memory.
func OnDevice(d Device) Location { return Location{dev: d} }

// IsHost reports whether l is the host.
func (l Location) IsHost() bool { return l.host }

// Device is the device of a location on a device.
func (l Location) Device() Device { return l.dev }

func (l Location) raw() libcuda.MemLocation {
	if l.host {
		return libcuda.MemLocation{Type: libcuda.CU_MEM_LOCATION_TYPE_HOST}
	}
	return libcuda.MemLocation{Type: libcuda.CU_MEM_LOCATION_TYPE_DEVICE, Id: int32(l.dev.ordinal)}
}

// String is "host" or "device N".
func (l Location) String() string {
	if l.host {
		return "host"
	}
	return fmt.Sprintf("device %d", l.dev.ordinal)
}

// errNoConcurrent is the error of prefetch and advice on a device where
// they take no effect.
func (m *Managed[T]) needConcurrent(op string) error {
	if !m.concurrent {
		return fmt.Errorf("cuda: Managed.%s: the device has no concurrent managed access (Device.ConcurrentManagedAccess): %w", op, ErrNotSupported)
	}
	return nil
}

// Prefetch moves the memory's pages to loc in stream order on s
// (cuMemPrefetchAsync), so that the work after it there finds them in
// place; the stream is remembered as a user. It needs concurrent managed
// access (ErrNotSupported otherwise).
func (m *Managed[T]) Prefetch(s *Stream, loc Location) error {
	if m == nil || m.x.h == nil {
		return nilErr("Managed", "Prefetch")
	}
	if err := m.needConcurrent("Prefetch"); err != nil {
		return err
	}
	st, err := s.acquire("Prefetch")
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	a := m.x.h.a()
	p, err := a.acquire(0)
	if err != nil {
		return fmt.Errorf("cuda: Managed.Prefetch: %w", err)
	}
	done := false
	defer func() { a.release(st, done) }()
	if err := a.orderUse(st, Read, 0, a.bytes); err != nil {
		return fmt.Errorf("cuda: Managed.Prefetch: ordering after other streams: %w", err)
	}
	err = st.ctx.do(func() error { return libcuda.MemPrefetchAsync(p, uint64(a.bytes), loc.raw(), 0, st.raw) })
	if err != nil {
		return driverErr("cuMemPrefetchAsync", err)
	}
	done = true
	return nil
}

// Advice is a hint about how managed memory is used (CUmem_advise).
type Advice = libcuda.Mem_advise

const (
	// ReadMostly: the memory is mostly read; the driver may keep copies
	// where it is read. Its location is not used.
	ReadMostly Advice = libcuda.CU_MEM_ADVISE_SET_READ_MOSTLY
	// UnsetReadMostly undoes ReadMostly.
	UnsetReadMostly Advice = libcuda.CU_MEM_ADVISE_UNSET_READ_MOSTLY
	// PreferredLocation: keep the pages at the location.
	PreferredLocation Advice = libcuda.CU_MEM_ADVISE_SET_PREFERRED_LOCATION
	// UnsetPreferredLocation undoes PreferredLocation.
	UnsetPreferredLocation Advice = libcuda.CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION
	// AccessedBy: the location's processor will use the memory; keep it
	// mapped there.
	AccessedBy Advice = libcuda.CU_MEM_ADVISE_SET_ACCESSED_BY
	// UnsetAccessedBy undoes AccessedBy.
	UnsetAccessedBy Advice = libcuda.CU_MEM_ADVISE_UNSET_ACCESSED_BY
)

// Advise gives the driver a hint about the whole allocation (cuMemAdvise);
// loc is the location the advice names (ignored for ReadMostly). It needs
// concurrent managed access (ErrNotSupported otherwise).
func (m *Managed[T]) Advise(advice Advice, loc Location) error {
	if m == nil || m.x.h == nil {
		return nilErr("Managed", "Advise")
	}
	if err := m.needConcurrent("Advise"); err != nil {
		return err
	}
	a := m.x.h.a()
	p, err := a.acquire(0)
	if err != nil {
		return fmt.Errorf("cuda: Managed.Advise: %w", err)
	}
	defer a.mu.RUnlock()
	if err := a.ctx.do(func() error { return libcuda.MemAdvise(p, uint64(a.bytes), advice, loc.raw()) }); err != nil {
		return driverErr("cuMemAdvise", err)
	}
	return nil
}

// LastPrefetch is where the memory was last prefetched to
// (CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION), whether or not that
// prefetch has finished; ok is false when it never was.
func (m *Managed[T]) LastPrefetch() (loc Location, ok bool, err error) {
	if m == nil || m.x.h == nil {
		return Location{}, false, nilErr("Managed", "LastPrefetch")
	}
	a := m.x.h.a()
	p, err := a.acquire(0)
	if err != nil {
		return Location{}, false, fmt.Errorf("cuda: Managed.LastPrefetch: %w", err)
	}
	defer a.mu.RUnlock()
	var v int32
	// In the memory's context: the driver needs one current for this.
	if err := a.ctx.do(func() error {
		return libcuda.MemRangeGetAttribute(unsafe.Pointer(&v), 4, libcuda.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, p, uint64(a.bytes))
	}); err != nil {
		return Location{}, false, driverErr("cuMemRangeGetAttribute", err)
	}
	switch {
	case v == -1: // CU_DEVICE_CPU
		return OnHost(), true, nil
	case v >= 0:
		devs, err := Devices()
		if err != nil {
			return Location{}, false, err
		}
		if int(v) < len(devs) {
			return OnDevice(devs[v]), true, nil
		}
	}
	return Location{}, false, nil
}

// Free frees the memory once the work of every stream that used it has
// finished (see # Memory); Data must not be used after it. A second Free is
// an error matching ErrFreed.
func (m *Managed[T]) Free() error {
	if m == nil || m.x.h == nil {
		return nilErr("Managed", "Free")
	}
	m.x.h.stopRelease()
	return m.x.h.a().free()
}

// freeManaged frees managed memory after the work of the streams in used:
// an event of each now, and on a goroutine a wait for them, then cuMemFree
// (a device-wide wait, off the caller's path), postponed while captures
// are in progress since cuMemFree would break them.
func (a *alloc) freeManaged(used []*streamState) error {
	marks := make([]mark, 0, len(used))
	for _, u := range used {
		m, err := u.mark()
		if err != nil {
			dropMarks(marks)
			return err // the memory stays allocated
		}
		marks = append(marks, m)
	}
	go func() {
		for _, m := range marks {
			if err := sync.Event(context.Background(), m.ev); err != nil {
				logErr("waiting for the users of managed memory; it stays allocated", err)
				dropMarks(marks)
				return
			}
		}
		dropMarks(marks)
		free := func() {
			if err := a.ctx.do(func() error { return libcuda.MemFree(a.ptr) }); err != nil {
				logErr("freeing managed memory", driverErr("cuMemFree", err))
				return
			}
			a.ctx.drop()
		}
		if ran, _ := sync.IfNoCapture(func() error { free(); return nil }); !ran {
			sync.Postpone(free)
		}
	}()
	return nil
}

// dropMarks is destroyMarks where no caller takes the error: it is logged.
func dropMarks(marks []mark) {
	if err := destroyMarks(marks); err != nil {
		logErr("destroying the event of a free", err)
	}
}
