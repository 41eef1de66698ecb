package tests

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// The driver's own copies and memsets over two host registrations side by
// side return CUDA_ERROR_INVALID_VALUE (the H200, driver 580), where a
// kernel may read across them (TestConformanceKernelReadsAcrossAdjacentRegistrations);
// over one registration they work. hostmem's doc ("Adjacent registrations")
// and package cuda's copies, which split such a range, rest on this.
func TestConformanceCopiesRefuseAdjacentRegistrations(t *testing.T) {
	testenv.OnPrimary(t, 0)
	const half = 4096
	p := inputPages(t, 2*half)
	host := unsafe.Slice((*byte)(p), 2*half)
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, 2*half))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemFree(dev)) })
	flags := uint32(libcuda.CU_MEMHOSTREGISTER_DEVICEMAP | libcuda.CU_MEMHOSTREGISTER_PORTABLE)
	testenv.Must(t, libcuda.MemHostRegister(p, half, flags))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemHostUnregister(p)) })
	testenv.Must(t, libcuda.MemHostRegister(unsafe.Add(p, half), half, flags))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemHostUnregister(unsafe.Add(p, half))) })
	var dp libcuda.Deviceptr
	testenv.Must(t, libcuda.MemHostGetDevicePointer(&dp, p, 0))

	refused := []struct {
		name string
		call func() error
	}{
		{"cuMemsetD8 over both", func() error { return libcuda.MemsetD8(dp, 7, 2*half) }},
		{"cuMemsetD8 across the boundary", func() error { return libcuda.MemsetD8(dp+half-8, 7, 16) }},
		{"cuMemcpyHtoD from both", func() error { return libcuda.MemcpyHtoD(dev, p, 2*half) }},
		{"cuMemcpyHtoD across the boundary", func() error { return libcuda.MemcpyHtoD(dev, unsafe.Add(p, half-8), 16) }},
	}
	var b strings.Builder
	for _, c := range refused {
		err := c.call()
		fmt.Fprintf(&b, "\n%-36s %d", c.name, inputCode(err))
		if !errors.Is(err, libcuda.CUDA_ERROR_INVALID_VALUE) {
			t.Errorf("%s = %v, want CUDA_ERROR_INVALID_VALUE", c.name, err)
		}
	}
	for i := range host {
		if host[i] != 0 {
			t.Fatalf("byte %d = %d after refused memsets, want 0", i, host[i])
		}
	}

	// One registration at a time works, and a copy of both halves brings
	// back what the memsets wrote.
	testenv.Must(t, libcuda.MemsetD8(dp, 1, half))
	testenv.Must(t, libcuda.MemsetD8(dp+half, 2, half))
	testenv.Must(t, libcuda.MemcpyHtoD(dev, p, half))
	testenv.Must(t, libcuda.MemcpyHtoD(dev+half, unsafe.Add(p, half), half))
	back := make([]byte, 2*half)
	testenv.Must(t, libcuda.MemcpyDtoH(unsafe.Pointer(&back[0]), dev, 2*half))
	for i, v := range back {
		want := byte(1 + i/half)
		if v != want || host[i] != want {
			t.Fatalf("byte %d: host %d, device %d, want %d", i, host[i], v, want)
		}
	}
	fmt.Fprintf(&b, "\n%-36s %d", "each registration on its own", 0)
	t.Logf("copies and memsets over two adjacent registrations:%s", b.String())
}
