package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
)

// This file holds what a program does with pools beyond allocating from
// them: the device's current pool, other devices' access to a pool, and
// sharing a pool's allocations with other processes on the host.
//
// # Sharing memory between processes
//
// Processes on one host share device memory through a pool made with
// Exportable (on Linux: the pool is exported as a POSIX file descriptor):
//
//	// the exporting process
//	pool, _ := cuda.NewMemPool(dev, cuda.Exportable())
//	buf, _ := cuda.AllocFrom[float32](pool, s, n)
//	f, _ := pool.Export()             // an *os.File: send it over a unix socket (SCM_RIGHTS)
//	p, _ := cuda.ExportPointer(buf)   // 72 bytes, once the pool is exported: send them any way
//
//	// the importing process
//	pool, _ := cuda.ImportMemPool(dev, f) // the descriptor it received
//	if a, _ := pool.Access(dev); a != cuda.PoolAccessReadWrite {
//		pool.SetAccess(dev, cuda.PoolAccessReadWrite)
//	}
//	buf, _ := cuda.ImportPointer[float32](pool, s, p)
//
// The descriptor is a handle of the operating system, which only a unix
// socket's SCM_RIGHTS message (or inheritance by a child process) carries
// to another process; a PoolPointer is plain bytes. Both processes use the
// same device memory: order their work with an Interprocess event. The
// importer frees its Slice (and closes its pool) before the exporter frees
// the allocation.

// Exportable makes NewMemPool's pool one whose allocations other
// processes can import (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR; Linux,
// on devices where Device.PosixFDHandles is true): see MemPool.Export.
func Exportable() MemPoolOption {
	return MemPoolOption{set: func(p *libcuda.MemPoolProps) {
		p.HandleTypes = libcuda.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
	}}
}

// Export gives a file descriptor of a pool made with Exportable
// (cuMemPoolExportToShareableHandle), for another process to import with
// ImportMemPool. The file is the caller's to close once it is sent; the
// pool stays shared meanwhile.
func (m *MemPool) Export() (*os.File, error) {
	unlock, err := m.use("Export")
	if err != nil {
		return nil, err
	}
	defer unlock()
	var fd int32 = -1
	if err := libcuda.MemPoolExportToShareableHandle(unsafe.Pointer(&fd), m.raw, libcuda.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0); err != nil {
		return nil, driverErr("cuMemPoolExportToShareableHandle", err)
	}
	if fd < 0 {
		return nil, errors.New("cuda: MemPool.Export: the driver gave no file descriptor")
	}
	return os.NewFile(uintptr(fd), "cuda-mempool"), nil
}

// ImportMemPool opens a pool that another process (or this one) exported
// with MemPool.Export, from the file descriptor it received
// (cuMemPoolImportFromShareableHandle); d is the pool's device. f stays the
// caller's: close it when it is no longer needed (the pool does not need
// it). Where the importing device has no access to the pool yet
// (MemPool.Access), give it with SetAccess before using what is imported.
// The pool serves ImportPointer only: the driver refuses AllocFrom and
// Device.SetMemPool with it. Close it after freeing what was imported.
func ImportMemPool(d Device, f *os.File) (*MemPool, error) {
	if f == nil {
		return nil, fmt.Errorf("cuda: ImportMemPool: nil file: %w", ErrNil)
	}
	fd := f.Fd()
	var raw libcuda.MemoryPool
	// The handle of a file descriptor is the descriptor's value itself,
	// passed where C takes a pointer: an integer, never dereferenced.
	err := libcuda.MemPoolImportFromShareableHandle(&raw, *(*unsafe.Pointer)(unsafe.Pointer(&fd)), libcuda.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)
	runtime.KeepAlive(f) // the descriptor stays open until the call returns
	if err != nil {
		return nil, driverErr("cuMemPoolImportFromShareableHandle", err)
	}
	m := &MemPool{raw: raw, dev: d, own: true}
	m.cleanup = runtime.AddCleanup(m, func(raw libcuda.MemoryPool) {
		dropped("MemPool", "Close")
		if err := libcuda.MemPoolDestroy(raw); err != nil {
			logErr("destroying a dropped imported MemPool", driverErr("cuMemPoolDestroy", err))
		}
	}, raw)
	return m, nil
}

// PoolPointer names one allocation of an exported pool for another
// process (CUmemPoolPtrExportData, and the allocation's length): plain
// bytes, to be sent any way (MarshalBinary), unlike the pool's file
// descriptor.
type PoolPointer struct {
	Data  [64]byte // the driver's
	Bytes uint64   // the allocation's length
}

// MarshalBinary writes the pointer as 72 bytes.
func (p PoolPointer) MarshalBinary() ([]byte, error) {
	b := make([]byte, 72)
	copy(b, p.Data[:])
	binary.LittleEndian.PutUint64(b[64:], p.Bytes)
	return b, nil
}

// UnmarshalBinary reads what MarshalBinary wrote.
func (p *PoolPointer) UnmarshalBinary(b []byte) error {
	if len(b) != 72 {
		return fmt.Errorf("cuda: PoolPointer.UnmarshalBinary: %d bytes, want 72: %w", len(b), ErrLength)
	}
	copy(p.Data[:], b)
	p.Bytes = binary.LittleEndian.Uint64(b[64:])
	return nil
}

// ExportPointer names x's allocation, made by AllocFrom from a pool made
// with Exportable, for another process to import (cuMemPoolExportPointer).
// The pool must have been exported with MemPool.Export first (the driver
// exports only allocations of an already shared pool, and refuses others
// with CUDA_ERROR_INVALID_VALUE), and x must be the whole allocation, not a
// part of it. The memory must stay allocated here until every importer has
// freed it.
func ExportPointer[T any](x Slice[T]) (PoolPointer, error) {
	if x.h == nil {
		return PoolPointer{}, fmt.Errorf("cuda: ExportPointer: %w", ErrNil)
	}
	a := x.h.a()
	size := reflect.TypeFor[T]().Size()
	if x.off != 0 || uintptr(x.n)*size != a.bytes || a.bytes == 0 {
		return PoolPointer{}, fmt.Errorf("cuda: ExportPointer: %v is not a whole allocation: %w", x, ErrLength)
	}
	p, err := a.acquire(0)
	if err != nil {
		return PoolPointer{}, fmt.Errorf("cuda: ExportPointer: %w", err)
	}
	defer a.mu.RUnlock()
	var data libcuda.MemPoolPtrExportData
	if err := a.ctx.do(func() error { return libcuda.MemPoolExportPointer(&data, p) }); err != nil {
		return PoolPointer{}, driverErr("cuMemPoolExportPointer", err)
	}
	return PoolPointer{Data: data.Reserved, Bytes: uint64(a.bytes)}, nil
}

// ImportPointer opens an allocation that another process exported with
// ExportPointer, from the pool imported with ImportMemPool
// (cuMemPoolImportPointer), as a Slice of p.Bytes / sizeof(T) elements
// used first on s. The memory is the exporter's: do not use it before the
// exporter's allocation has completed, and Free it (which frees nothing
// but the mapping here) before the exporter frees it.
func ImportPointer[T any](pool *MemPool, s *Stream, p PoolPointer) (Slice[T], error) {
	t := reflect.TypeFor[T]()
	if err := checkElem(t); err != nil {
		return Slice[T]{}, fmt.Errorf("cuda: ImportPointer: %w", err)
	}
	size := uint64(t.Size())
	if p.Bytes == 0 || p.Bytes%size != 0 || p.Bytes/size > uint64(^uint(0)>>1) {
		return Slice[T]{}, fmt.Errorf("cuda: ImportPointer: %d bytes are no whole number of %v: %w", p.Bytes, t, ErrLength)
	}
	unlock, err := pool.use("ImportPointer")
	if err != nil {
		return Slice[T]{}, err
	}
	defer unlock()
	st, err := s.acquire("ImportPointer")
	if err != nil {
		return Slice[T]{}, err
	}
	defer st.mu.RUnlock()
	if pool.dev.dev != st.ctx.dev.dev {
		return Slice[T]{}, fmt.Errorf("cuda: ImportPointer: the pool is on device %d, the stream on device %d", pool.dev.ordinal, st.ctx.dev.ordinal)
	}
	data := libcuda.MemPoolPtrExportData{Reserved: p.Data}
	var ptr libcuda.Deviceptr
	if err := st.ctx.do(func() error { return libcuda.MemPoolImportPointer(&ptr, pool.raw, &data) }); err != nil {
		return Slice[T]{}, driverErr("cuMemPoolImportPointer", err)
	}
	st.ctx.ref()
	a := &alloc{ctx: st.ctx, ptr: ptr, bytes: uintptr(p.Bytes)}
	a.used = append(make([]*streamState, 0, 2), st)
	a.last.Store(st)
	a.solo.Store(st)
	h := &allocHandle{shared: a, class: classOf(t)}
	h.cleanup = runtime.AddCleanup(h, func(a *alloc) {
		dropped("Slice", "Free")
		if err := a.free(); err != nil && !errors.Is(err, ErrFreed) {
			logErr("freeing a dropped imported Slice", err)
		}
	}, a)
	return Slice[T]{h: h, n: int(p.Bytes / size)}, nil
}

// PoolAccess is what a device may do with a pool's memory
// (CUmemAccess_flags).
type PoolAccess = libcuda.MemAccess_flags

const (
	// PoolAccessNone: the device may not touch the memory.
	PoolAccessNone PoolAccess = libcuda.CU_MEM_ACCESS_FLAGS_PROT_NONE
	// PoolAccessRead: the device may read it.
	PoolAccessRead PoolAccess = libcuda.CU_MEM_ACCESS_FLAGS_PROT_READ
	// PoolAccessReadWrite: the device may read and write it.
	PoolAccessReadWrite PoolAccess = libcuda.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
)

// SetAccess lets device d use the memory of the pool's allocations, past
// and future, as a says (cuMemPoolSetAccess): how a kernel on one GPU reads
// a buffer allocated from another's pool. The pool's own device always
// reads and writes; a peer needs Device.CanAccessPeer.
func (m *MemPool) SetAccess(d Device, a PoolAccess) error {
	unlock, err := m.use("SetAccess")
	if err != nil {
		return err
	}
	defer unlock()
	desc := libcuda.MemAccessDesc{
		Location: libcuda.MemLocation{Type: libcuda.CU_MEM_LOCATION_TYPE_DEVICE, Id: int32(d.ordinal)},
		Flags:    a,
	}
	if err := libcuda.MemPoolSetAccess(m.raw, &desc, 1); err != nil {
		return driverErr("cuMemPoolSetAccess", err)
	}
	return nil
}

// Access is what device d may do with the pool's memory
// (cuMemPoolGetAccess).
func (m *MemPool) Access(d Device) (PoolAccess, error) {
	unlock, err := m.use("Access")
	if err != nil {
		return 0, err
	}
	defer unlock()
	loc := libcuda.MemLocation{Type: libcuda.CU_MEM_LOCATION_TYPE_DEVICE, Id: int32(d.ordinal)}
	var a PoolAccess
	if err := libcuda.MemPoolGetAccess(&a, m.raw, &loc); err != nil {
		return 0, driverErr("cuMemPoolGetAccess", err)
	}
	return a, nil
}

// MemPool is the device's current pool, the one Alloc takes memory from
// (cuDeviceGetMemPool): its default pool unless SetMemPool chose another.
// The MemPool returned is a view of it: its Close is refused (close the
// value NewMemPool gave).
func (d Device) MemPool() (*MemPool, error) {
	var raw libcuda.MemoryPool
	if err := libcuda.DeviceGetMemPool(&raw, d.dev); err != nil {
		return nil, driverErr("cuDeviceGetMemPool", err)
	}
	return &MemPool{raw: raw, dev: d}, nil
}

// SetMemPool makes p the device's current pool (cuDeviceSetMemPool): the
// Allocs on the device's streams take memory from it from now on, in every
// context of the process. nil makes the default pool current again. p must
// be a pool of the device, not an imported one. Closing p makes the
// default pool current again.
func (d Device) SetMemPool(p *MemPool) error {
	if p == nil {
		var raw libcuda.MemoryPool
		if err := libcuda.DeviceGetDefaultMemPool(&raw, d.dev); err != nil {
			return driverErr("cuDeviceGetDefaultMemPool", err)
		}
		if err := libcuda.DeviceSetMemPool(d.dev, raw); err != nil {
			return driverErr("cuDeviceSetMemPool", err)
		}
		return nil
	}
	unlock, err := p.use("SetMemPool")
	if err != nil {
		return err
	}
	defer unlock()
	if p.dev.dev != d.dev {
		return fmt.Errorf("cuda: Device.SetMemPool: the pool is on device %d, not %d", p.dev.ordinal, d.ordinal)
	}
	if err := libcuda.DeviceSetMemPool(d.dev, p.raw); err != nil {
		return driverErr("cuDeviceSetMemPool", err)
	}
	return nil
}
