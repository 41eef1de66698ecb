package testenv

import (
	"testing"

	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/libcuda"
)

// Fault is what a kernel-fault test starts from, on device 0's primary
// context (current on the test's locked thread, see OnThread): a stream
// for the test's own work, the stream the fault will run on, and 4 KiB of
// device memory. Nothing of it is destroyed: after the fault the calls
// would fail, and the test runs in a child process (InChild) that ends.
type Fault struct {
	Dev    libcuda.Device // device 0
	Ctx    libcuda.Context
	Stream libcuda.Stream    // non-blocking, for the test's own work
	Bad    libcuda.Stream    // non-blocking, where Launch faults
	Mem    libcuda.Deviceptr // 4096 bytes: 1024 int32
	Fill   libcuda.Func      // fill_i32(int *data, unsigned long long n, int value) of internal/kernels
}

// NewFault sets up a Fault; the calling goroutine stays locked to its
// thread, with the context current, until the test ends.
func NewFault(t *testing.T) *Fault {
	t.Helper()
	f := &Fault{}
	Must(t, libcuda.DeviceGet(&f.Dev, 0))
	Must(t, libcuda.DevicePrimaryCtxRetain(&f.Ctx, f.Dev))
	OnThread(t, f.Ctx)
	m, err := libcuda.LoadModule(kernels.PTX)
	Must(t, err)
	f.Fill = Kernel(t, m, "fill_i32")
	Must(t, libcuda.StreamCreate(&f.Stream, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	Must(t, libcuda.StreamCreate(&f.Bad, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	Must(t, libcuda.MemAlloc(&f.Mem, 4096))
	return f
}

// Launch launches the kernel that faults, on Bad: fill_i32 writing 2^40
// ints from Mem's 1024, out of bounds within the first pages past it. The
// fault shows at the next wait (the context is lost from then on).
func (f *Fault) Launch(t *testing.T) {
	t.Helper()
	Must(t, f.Fill.Launch(libcuda.Dim3{X: 65535}, libcuda.Dim3{X: 1024}, 0, f.Bad, f.Mem, uint64(1)<<40, int32(1)))
}
