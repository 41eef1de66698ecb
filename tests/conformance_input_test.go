package tests

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// Conformance cases for bad input (issue 15): what the driver says about
// kernel parameters, NULL host pointers and ranges over adjacent
// registrations. They run on the simulator and on the GPU and print what
// they saw.

// inputCode is the CUresult of err, or -1 for an error that is not one.
func inputCode(err error) int {
	if err == nil {
		return 0
	}
	var r libcuda.Result
	if errors.As(err, &r) {
		return int(r)
	}
	return -1
}

// inputPages returns n bytes of Go memory that start on a 4 KiB boundary,
// kept alive until the test ends.
func inputPages(t testing.TB, n int) unsafe.Pointer {
	b := make([]byte, n+4096)
	t.Cleanup(func() { runtime.KeepAlive(b) })
	p := unsafe.Pointer(&b[0])
	return unsafe.Add(p, (4096-uintptr(p)%4096)%4096)
}

// cuFuncGetParamInfo gives each test kernel's parameters, offset and size,
// and 1 for the index past the last.
func TestConformanceFuncGetParamInfo(t *testing.T) {
	testenv.OnPrimary(t, 0)
	m := testenv.LoadKernels(t)
	want := map[string][][2]uint64{
		"spin":        {{0, 8}},
		"add_one_i32": {{0, 8}, {8, 8}},
		"fill_i32":    {{0, 8}, {8, 8}, {16, 4}},
		"sum_i64":     {{0, 8}, {8, 8}, {16, 8}, {24, 8}},
	}
	var b strings.Builder
	for _, name := range []string{"spin", "add_one_i32", "fill_i32", "sum_i64"} {
		f := testenv.Kernel(t, m, name).Handle()
		fmt.Fprintf(&b, "\n%-12s", name)
		for i, w := range want[name] {
			var off, size uint64
			err := libcuda.FuncGetParamInfo(f, uint64(i), &off, &size)
			fmt.Fprintf(&b, " %d:(%d,%d)=%d", i, off, size, inputCode(err))
			if err != nil || off != w[0] || size != w[1] {
				t.Errorf("%s parameter %d: offset %d size %d, %v; want %d %d", name, i, off, size, err, w[0], w[1])
			}
		}
		var off, size uint64
		err := libcuda.FuncGetParamInfo(f, uint64(len(want[name])), &off, &size)
		fmt.Fprintf(&b, " past the end=%d", inputCode(err))
		if !errors.Is(err, libcuda.CUDA_ERROR_INVALID_VALUE) {
			t.Errorf("%s: parameter %d (past the last) = %v, want CUDA_ERROR_INVALID_VALUE", name, len(want[name]), err)
		}
	}
	t.Logf("cuFuncGetParamInfo (index:(offset,size)=result):%s", b.String())
}

// Driver calls given a NULL host pointer return CUDA_ERROR_INVALID_VALUE
// (the simulator used to crash on the copies).
func TestConformanceNullHostPointers(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, 4096))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemFree(dev)) })
	var dptr libcuda.Deviceptr
	var flags uint32
	calls := []struct {
		name string
		call func() error
	}{
		{"cuMemHostRegister(NULL, 4096)", func() error {
			return libcuda.MemHostRegister(nil, 4096, uint32(libcuda.CU_MEMHOSTREGISTER_DEVICEMAP))
		}},
		{"cuMemHostUnregister(NULL)", func() error { return libcuda.MemHostUnregister(nil) }},
		{"cuMemHostGetDevicePointer(NULL)", func() error { return libcuda.MemHostGetDevicePointer(&dptr, nil, 0) }},
		{"cuMemHostGetFlags(NULL)", func() error { return libcuda.MemHostGetFlags(&flags, nil) }},
		{"cuMemcpyHtoD(dev, NULL, 64)", func() error { return libcuda.MemcpyHtoD(dev, nil, 64) }},
		{"cuMemcpyDtoH(NULL, dev, 64)", func() error { return libcuda.MemcpyDtoH(nil, dev, 64) }},
		{"cuMemcpyHtoDAsync(dev, NULL, 64)", func() error { return libcuda.MemcpyHtoDAsync(dev, nil, 64, s) }},
		{"cuMemcpyDtoHAsync(NULL, dev, 64)", func() error { return libcuda.MemcpyDtoHAsync(nil, dev, 64, s) }},
	}
	var b strings.Builder
	for _, c := range calls {
		err := c.call()
		fmt.Fprintf(&b, "\n%-36s %d", c.name, inputCode(err))
		if !errors.Is(err, libcuda.CUDA_ERROR_INVALID_VALUE) {
			t.Errorf("%s = %v, want CUDA_ERROR_INVALID_VALUE", c.name, err)
		}
	}
	testenv.Must(t, libcuda.StreamSynchronize(s))
	t.Logf("NULL host pointers:%s", b.String())
}

// Two ranges registered separately, side by side, and a kernel over their
// union: with unified addressing each is mapped at its host address, so the
// kernel most likely reads (and writes) across the boundary. The test runs
// in a context of its own, so that an illegal address, which breaks the
// context for good, cannot harm the other tests; it prints what it saw.
func TestConformanceKernelReadsAcrossAdjacentRegistrations(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var prev libcuda.Context
	testenv.Must(t, libcuda.CtxGetCurrent(&prev))
	var dev libcuda.Device
	testenv.Must(t, libcuda.DeviceGet(&dev, 0))
	var cu libcuda.Context
	testenv.Must(t, libcuda.CtxCreate(&cu, nil, 0, dev)) // current on this thread
	t.Cleanup(func() {
		testenv.Must(t, libcuda.CtxDestroy(cu))
		testenv.RestoreCurrent(t, prev)
	})
	var unified int32
	testenv.Must(t, libcuda.DeviceGetAttribute(&unified, libcuda.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, dev))

	m, err := libcuda.LoadModule(kernels.PTX)
	testenv.Must(t, err)
	defer func() { _ = libcuda.ModuleUnload(m) }() // fails in a broken context: nothing to check
	sum := testenv.Kernel(t, m, "sum_i64")
	addOne := testenv.Kernel(t, m, "add_one_i32")
	var out libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&out, 8))
	defer func() { _ = libcuda.MemFree(out) }()

	const n = 1024 // int64s: 8 KiB, two pages
	var report strings.Builder
	fmt.Fprintf(&report, "unified addressing %d", unified)
	defer func() { t.Logf("a kernel over two adjacent registrations:\n%s", report.String()) }()
	broken := false
	for _, split := range []int{4096, 3000} { // on the page boundary, and inside a page
		p := inputPages(t, n*8)
		in := unsafe.Slice((*int64)(p), n)
		want := int64(0)
		for i := range in {
			in[i] = int64(i + 1)
			want += int64(i + 1)
		}
		flags := uint32(libcuda.CU_MEMHOSTREGISTER_DEVICEMAP | libcuda.CU_MEMHOSTREGISTER_PORTABLE)
		testenv.Must(t, libcuda.MemHostRegister(p, uint64(split), flags))
		testenv.Must(t, libcuda.MemHostRegister(unsafe.Add(p, split), uint64(n*8-split), flags))
		var dp libcuda.Deviceptr
		testenv.Must(t, libcuda.MemHostGetDevicePointer(&dp, p, 0))

		launch := sum.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 256}, 0, libcuda.CU_STREAM_LEGACY, dp, uint64(n), out, uint64(0))
		sync := libcuda.CtxSynchronize()
		var got int64
		copyErr := libcuda.MemcpyDtoH(unsafe.Pointer(&got), out, 8)
		fmt.Fprintf(&report, "\nsplit at byte %d: sum_i64 over both: launch %d, sync %d, copy %d, sum %d (want %d)",
			split, inputCode(launch), inputCode(sync), inputCode(copyErr), got, want)
		if launch != nil || sync != nil || copyErr != nil || got != want {
			t.Errorf("split at %d: sum_i64 across the boundary: launch %v, sync %v, copy %v, sum %d want %d",
				split, launch, sync, copyErr, got, want)
			broken = true
		}
		if !broken {
			ints := unsafe.Slice((*int32)(p), 2*n)
			launch = addOne.Launch(libcuda.Dim3{X: 8}, libcuda.Dim3{X: 256}, 0, libcuda.CU_STREAM_LEGACY, dp, uint64(2*n))
			sync = libcuda.CtxSynchronize()
			bad := -1
			for i, v := range ints {
				// each int64 1+i read as two int32s (little-endian): low word, high word 0; plus one
				wantV := int32(1)
				if i%2 == 0 {
					wantV = int32(i/2+1) + 1
				}
				if v != wantV {
					bad = i
					break
				}
			}
			fmt.Fprintf(&report, "; add_one_i32 over both: launch %d, sync %d, first wrong element %d", inputCode(launch), inputCode(sync), bad)
			if launch != nil || sync != nil || bad >= 0 {
				t.Errorf("split at %d: add_one_i32 across the boundary: launch %v, sync %v, first wrong element %d", split, launch, sync, bad)
				broken = true
			}
		}
		if broken {
			break // the context may be unusable: nothing more to learn
		}
		testenv.Must(t, libcuda.MemHostUnregister(unsafe.Add(p, split)))
		testenv.Must(t, libcuda.MemHostUnregister(p))
	}
}
