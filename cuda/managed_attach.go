package cuda

import (
	"fmt"

	"github.com/purecuda/purecuda/libcuda"
)

// AttachSingle: only the stream given to Managed.Attach may use the
// memory (CU_MEM_ATTACH_SINGLE); for Attach only, not AllocManaged.
const AttachSingle Attach = libcuda.CU_MEM_ATTACH_SINGLE

// Attach changes which streams may use the managed memory, in stream
// order on s (cuStreamAttachMemAsync, for the whole allocation): from when
// s reaches it, AttachGlobal lets every stream use it, AttachHost gives it
// to the host (no stream may use it), AttachSingle to s alone. On a device
// without concurrent managed access (Device.ConcurrentManagedAccess) this
// is what lets the host touch Data while kernels of other streams run:
// memory attached to the host, or to a stream that is idle, is the host's.
// Where access is concurrent the driver accepts it and it changes nothing
// that a program can see. s is remembered as a user of the memory, as a
// Prefetch's stream is.
//
// (Attach is a method of Managed, not of Stream, since a Go method cannot
// take a type parameter.)
func (m *Managed[T]) Attach(s *Stream, mode Attach) error {
	if m == nil || m.x.h == nil {
		return nilErr("Managed", "Attach")
	}
	if mode != AttachGlobal && mode != AttachHost && mode != AttachSingle {
		return fmt.Errorf("cuda: Managed.Attach: mode %d is none of AttachGlobal, AttachHost, AttachSingle", mode)
	}
	st, err := s.acquire("Attach")
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	a := m.x.h.a
	p, err := a.acquire(0)
	if err != nil {
		return fmt.Errorf("cuda: Managed.Attach: %w", err)
	}
	done := false
	defer func() { a.release(st, done) }()
	if err := a.orderUse(st, Write, 0, a.bytes); err != nil {
		return fmt.Errorf("cuda: Managed.Attach: ordering after other streams: %w", err)
	}
	err = st.ctx.do(func() error { return libcuda.StreamAttachMemAsync(st.raw, p, 0, uint32(mode)) })
	if err != nil {
		return driverErr("cuStreamAttachMemAsync", err)
	}
	done = true
	return nil
}
