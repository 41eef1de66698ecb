package cuda

import (
	"errors"
	"fmt"
	"runtime"
	gosync "sync"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
)

// MemPool is a pool of device memory for stream-ordered allocation (a
// CUmemoryPool): Alloc takes memory from the device's current pool,
// AllocFrom from a given one. Memory freed to a pool stays reserved in it
// for later allocations, up to the release threshold, until the next
// synchronization gives the rest back to the device; Trim gives it back
// now. Usage tells what a pool holds.
//
// Context.MemPool is the device's default pool, shared by the process;
// NewMemPool makes one of the program's own, destroyed by Close (or by the
// garbage collector, with a warning, when dropped). A
// MemPool's methods are safe for concurrent use.
type MemPool struct {
	raw     libcuda.MemoryPool
	dev     Device
	own     bool
	cleanup runtime.Cleanup

	mu     gosync.RWMutex // held for reading by uses, for writing by Close
	closed bool
}

// MemPoolUsage is what a pool holds, in bytes: reserved from the device
// (in use or kept for reuse) and used by allocations, now and at most
// since it was made or the high-water marks were reset.
type MemPoolUsage struct {
	ReservedCurrent, ReservedHigh uint64
	UsedCurrent, UsedHigh         uint64
}

// MemPoolOption sets up a pool that NewMemPool makes: MaxPoolSize. The
// zero MemPoolOption changes nothing.
type MemPoolOption struct {
	set func(*libcuda.MemPoolProps) // nil for none
}

// MaxPoolSize bounds the memory the pool may reserve, in bytes (0: the
// device's memory).
func MaxPoolSize(bytes uint64) MemPoolOption {
	return MemPoolOption{set: func(p *libcuda.MemPoolProps) { p.MaxSize = bytes }}
}

// MemPool is the device's default memory pool (cuDeviceGetDefaultMemPool),
// the one Alloc uses unless Device.SetMemPool made another current. Its
// Close is refused: it belongs to the device.
func (c *Context) MemPool() (*MemPool, error) {
	st, err := c.hold("MemPool")
	if err != nil {
		return nil, err
	}
	defer st.drop()
	var raw libcuda.MemoryPool
	if err := libcuda.DeviceGetDefaultMemPool(&raw, st.dev.dev); err != nil {
		return nil, driverErr("cuDeviceGetDefaultMemPool", err)
	}
	return &MemPool{raw: raw, dev: st.dev}, nil
}

// NewMemPool creates a memory pool of device memory on d
// (cuMemPoolCreate); allocate from it with AllocFrom and Close it when
// done. Memory still allocated from it at Close stays valid until freed.
func NewMemPool(d Device, opts ...MemPoolOption) (*MemPool, error) {
	props := libcuda.MemPoolProps{
		AllocType:   libcuda.CU_MEM_ALLOCATION_TYPE_PINNED,
		HandleTypes: libcuda.CU_MEM_HANDLE_TYPE_NONE,
		Location:    libcuda.MemLocation{Type: libcuda.CU_MEM_LOCATION_TYPE_DEVICE, Id: int32(d.ordinal)},
	}
	for _, o := range opts {
		if o.set != nil {
			o.set(&props)
		}
	}
	var raw libcuda.MemoryPool
	if err := libcuda.MemPoolCreate(&raw, &props); err != nil {
		return nil, driverErr("cuMemPoolCreate", err)
	}
	m := &MemPool{raw: raw, dev: d, own: true}
	m.cleanup = runtime.AddCleanup(m, func(raw libcuda.MemoryPool) {
		dropped("MemPool", "Close")
		if err := libcuda.MemPoolDestroy(raw); err != nil {
			logErr("destroying a dropped MemPool", driverErr("cuMemPoolDestroy", err))
		}
	}, raw)
	return m, nil
}

// AllocFrom allocates n elements of T from pool in stream order
// (cuMemAllocFromPoolAsync), as Alloc does from the device's pool; the
// pool must be on the stream's device. Free returns the memory to pool.
func AllocFrom[T any](pool *MemPool, s *Stream, n int) (Slice[T], error) {
	if pool == nil {
		return Slice[T]{}, nilErr("MemPool", "AllocFrom")
	}
	if !pool.mu.TryRLock() {
		return Slice[T]{}, closedErr("MemPool", "AllocFrom")
	}
	defer pool.mu.RUnlock()
	if pool.closed {
		return Slice[T]{}, closedErr("MemPool", "AllocFrom")
	}
	return allocSlice[T](s, n, pool)
}

// allocBytes allocates n bytes on the stream in stream order, from pool
// (or the device's current pool when nil). Out of memory trims the pool
// and tries once more. st.mu is held for reading.
func (st *streamState) allocBytes(n uintptr, pool *MemPool) (libcuda.Deviceptr, error) {
	call := "cuMemAllocAsync"
	if pool != nil {
		call = "cuMemAllocFromPoolAsync"
		if pool.dev.dev != st.ctx.dev.dev {
			return 0, fmt.Errorf("cuda: AllocFrom: the pool is on device %d, the stream on device %d", pool.dev.ordinal, st.ctx.dev.ordinal)
		}
	}
	var p libcuda.Deviceptr
	alloc := func() error {
		if pool != nil {
			return libcuda.MemAllocFromPoolAsync(&p, uint64(n), pool.raw, st.raw)
		}
		return libcuda.MemAllocAsync(&p, uint64(n), st.raw)
	}
	err := st.ctx.do(func() error {
		err := alloc()
		if !errors.Is(err, libcuda.CUDA_ERROR_OUT_OF_MEMORY) {
			return err
		}
		// Memory freed to the pool and not yet given back: give it back,
		// and try once more.
		raw := libcuda.MemoryPool(0)
		if pool != nil {
			raw = pool.raw
		} else if gerr := libcuda.DeviceGetMemPool(&raw, st.ctx.dev.dev); gerr != nil {
			return err
		}
		if terr := libcuda.MemPoolTrimTo(raw, 0); terr != nil {
			return err
		}
		return alloc()
	})
	if err != nil {
		return 0, driverErr(call, err)
	}
	return p, nil
}

// use holds an open pool for a call.
func (m *MemPool) use(op string) (unlock func(), err error) {
	if m == nil || m.raw == 0 {
		return nil, nilErr("MemPool", op)
	}
	if !m.mu.TryRLock() {
		return nil, closedErr("MemPool", op)
	}
	if m.closed {
		m.mu.RUnlock()
		return nil, closedErr("MemPool", op)
	}
	return m.mu.RUnlock, nil
}

// Device is the device whose memory the pool holds.
func (m *MemPool) Device() Device {
	if m == nil {
		return Device{}
	}
	return m.dev
}

// Raw is the driver's handle of the pool. Do not destroy it.
func (m *MemPool) Raw() libcuda.MemoryPool {
	if m == nil {
		return 0
	}
	return m.raw
}

func (m *MemPool) getAttr(op string, a libcuda.MemPool_attribute) (uint64, error) {
	unlock, err := m.use(op)
	if err != nil {
		return 0, err
	}
	defer unlock()
	var v uint64
	if err := libcuda.MemPoolGetAttribute(m.raw, a, unsafe.Pointer(&v)); err != nil {
		return 0, driverErr("cuMemPoolGetAttribute("+a.String()+")", err)
	}
	return v, nil
}

func (m *MemPool) setAttr(op string, a libcuda.MemPool_attribute, v uint64) error {
	unlock, err := m.use(op)
	if err != nil {
		return err
	}
	defer unlock()
	if err := libcuda.MemPoolSetAttribute(m.raw, a, unsafe.Pointer(&v)); err != nil {
		return driverErr("cuMemPoolSetAttribute("+a.String()+")", err)
	}
	return nil
}

// ReleaseThreshold is how many bytes of freed memory the pool keeps
// reserved across synchronizations (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD; 0
// by default: all of it goes back at the next synchronization).
func (m *MemPool) ReleaseThreshold() (uint64, error) {
	return m.getAttr("ReleaseThreshold", libcuda.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
}

// SetReleaseThreshold sets it; math.MaxUint64 keeps everything, which
// makes allocation loops fastest and the memory unavailable to others.
func (m *MemPool) SetReleaseThreshold(bytes uint64) error {
	return m.setAttr("SetReleaseThreshold", libcuda.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, bytes)
}

// Trim gives the device back the reserved memory that no allocation uses,
// keeping at least keep bytes reserved (cuMemPoolTrimTo).
//
// A Free is stream-ordered: the driver counts its memory as in use until
// the host has seen the free complete through a synchronizing call: a
// Stream.Sync (which polls the stream) may not be enough for Trim to give
// the memory back; Context.Sync (cuCtxSynchronize) is.
func (m *MemPool) Trim(keep uint64) error {
	unlock, err := m.use("Trim")
	if err != nil {
		return err
	}
	defer unlock()
	if err := libcuda.MemPoolTrimTo(m.raw, keep); err != nil {
		return driverErr("cuMemPoolTrimTo", err)
	}
	return nil
}

// Usage reads the pool's figures (CU_MEMPOOL_ATTR_RESERVED_MEM_* and
// USED_MEM_*).
func (m *MemPool) Usage() (MemPoolUsage, error) {
	var u MemPoolUsage
	for _, f := range []struct {
		a libcuda.MemPool_attribute
		v *uint64
	}{
		{libcuda.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &u.ReservedCurrent},
		{libcuda.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &u.ReservedHigh},
		{libcuda.CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &u.UsedCurrent},
		{libcuda.CU_MEMPOOL_ATTR_USED_MEM_HIGH, &u.UsedHigh},
	} {
		v, err := m.getAttr("Usage", f.a)
		if err != nil {
			return MemPoolUsage{}, err
		}
		*f.v = v
	}
	return u, nil
}

// ResetHighWater sets the high-water marks to the current figures.
func (m *MemPool) ResetHighWater() error {
	if err := m.setAttr("ResetHighWater", libcuda.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0); err != nil {
		return err
	}
	return m.setAttr("ResetHighWater", libcuda.CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0)
}

// Close destroys a pool made by NewMemPool (cuMemPoolDestroy); memory
// still allocated from it is released when freed. Closing twice is an
// error matching ErrClosed; closing the device's default pool is refused.
func (m *MemPool) Close() error {
	if m == nil || m.raw == 0 {
		return nilErr("MemPool", "Close")
	}
	if !m.own {
		return errors.New("cuda: MemPool.Close: a pool from Context.MemPool or Device.MemPool is not this value's to close")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return closedErr("MemPool", "Close")
	}
	m.closed = true
	m.cleanup.Stop()
	if err := libcuda.MemPoolDestroy(m.raw); err != nil {
		return driverErr("cuMemPoolDestroy", err)
	}
	return nil
}
