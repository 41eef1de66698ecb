//go:build !gpu

package tests

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// A raw cuLaunchKernel whose kernelParams hold a NULL entry for a
// parameter is CUDA_ERROR_INVALID_VALUE on the simulator, which used to
// crash on it, and launches nothing. What the real driver does is not
// known (it may crash), so this is not a conformance case; libcuda's
// checked launch refuses a nil argument before the driver.
func TestSimLaunchWithANullParameterIsRefused(t *testing.T) {
	testenv.OnPrimary(t, 0)
	m := testenv.LoadKernels(t)
	fill := testenv.Kernel(t, m, "fill_i32")
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, 64))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemFree(dev)) })
	testenv.Must(t, libcuda.MemsetD8(dev, 0, 64))
	n, v := uint64(16), int32(5)
	for i := range 3 {
		params := []unsafe.Pointer{unsafe.Pointer(&dev), unsafe.Pointer(&n), unsafe.Pointer(&v)}
		params[i] = nil
		before := testenv.SimStat(t, "kernel_launches")
		err := libcuda.LaunchKernel(fill.Handle(), 1, 1, 1, 16, 1, 1, 0, libcuda.CU_STREAM_LEGACY, &params[0], nil)
		if !errors.Is(err, libcuda.CUDA_ERROR_INVALID_VALUE) {
			t.Errorf("cuLaunchKernel with parameter %d NULL = %v, want CUDA_ERROR_INVALID_VALUE", i, err)
		}
		if got := testenv.SimStat(t, "kernel_launches"); got != before {
			t.Errorf("parameter %d NULL: %d kernels launched, want none", i, got-before)
		}
	}
	testenv.Must(t, libcuda.CtxSynchronize())
	got := make([]int32, 16)
	testenv.Must(t, libcuda.MemcpyDtoH(unsafe.Pointer(&got[0]), dev, 64))
	for i, x := range got {
		if x != 0 {
			t.Fatalf("element %d = %d after refused launches, want 0", i, x)
		}
	}
	// The checked launch refuses a nil argument itself.
	if err := fill.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 16}, 0, libcuda.CU_STREAM_LEGACY, dev, nil, v); err == nil {
		t.Error("Func.Launch with a nil argument: no error")
	}
	// With every entry set, the same launch works.
	params := []unsafe.Pointer{unsafe.Pointer(&dev), unsafe.Pointer(&n), unsafe.Pointer(&v)}
	testenv.Must(t, libcuda.LaunchKernel(fill.Handle(), 1, 1, 1, 16, 1, 1, 0, libcuda.CU_STREAM_LEGACY, &params[0], nil))
	testenv.Must(t, libcuda.CtxSynchronize())
	testenv.Must(t, libcuda.MemcpyDtoH(unsafe.Pointer(&got[0]), dev, 64))
	for i, x := range got {
		if x != v {
			t.Fatalf("element %d = %d after the launch, want %d", i, x, v)
		}
	}
}
