package cuda

import (
	"fmt"

	"github.com/purecuda/purecuda/libcuda"
)

// AttachSingle: only the stream given to Stream.Attach may use the
// memory (CU_MEM_ATTACH_SINGLE); for Stream.Attach only, not AllocManaged.
const AttachSingle Attach = libcuda.CU_MEM_ATTACH_SINGLE

// ManagedMemory is managed memory that Stream.Attach takes: a *Managed[T]
// of any T.
type ManagedMemory interface {
	managedAlloc() *alloc // nil for a nil Managed
}

func (m *Managed[T]) managedAlloc() *alloc {
	if m == nil || m.x.h == nil {
		return nil
	}
	return m.x.h.a()
}

// Attach changes which streams may use the managed memory m, in stream
// order on s (cuStreamAttachMemAsync, for the whole allocation): from when
// s reaches it, AttachGlobal lets every stream use it, AttachHost gives it
// to the host (no stream may use it), AttachSingle to s alone. On a device
// without concurrent managed access (Device.ConcurrentManagedAccess) this
// is what lets the host touch Data while kernels of other streams run:
// memory attached to the host, or to a stream that is idle, is the host's.
// Where access is concurrent the driver accepts it and it changes nothing
// that a program can see. s is remembered as a user of the memory, as a
// Prefetch's stream is.
func (s *Stream) Attach(m ManagedMemory, mode Attach) error {
	var a *alloc
	if m != nil {
		a = m.managedAlloc()
	}
	if a == nil {
		return nilErr("Managed", "Attach")
	}
	if mode != AttachGlobal && mode != AttachHost && mode != AttachSingle {
		return fmt.Errorf("cuda: Stream.Attach: mode %d is none of AttachGlobal, AttachHost, AttachSingle", mode)
	}
	st, err := s.acquire("Attach")
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	p, err := a.acquire(0)
	if err != nil {
		return fmt.Errorf("cuda: Stream.Attach: %w", err)
	}
	done := false
	defer func() { a.release(st, done) }()
	if err := a.orderUse(st, Write, 0, a.bytes); err != nil {
		return fmt.Errorf("cuda: Stream.Attach: ordering after other streams: %w", err)
	}
	err = st.ctx.do(func() error { return libcuda.StreamAttachMemAsync(st.raw, p, 0, uint32(mode)) })
	if err != nil {
		return driverErr("cuStreamAttachMemAsync", err)
	}
	done = true
	return nil
}
