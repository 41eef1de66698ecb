package tests

import (
	"math"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// The conformance cases of package cuda's pools, managed memory and 2D
// copies (issue 25): what the simulator models of them, checked against
// the driver by the -tags gpu run.

func poolAttr(t *testing.T, p libcuda.MemoryPool, a libcuda.MemPool_attribute) uint64 {
	t.Helper()
	var v uint64
	testenv.Must(t, libcuda.MemPoolGetAttribute(p, a, unsafe.Pointer(&v)))
	return v
}

// A pool's figures: nothing at first; an allocation is used and reserved;
// after its free (threshold at the maximum) nothing is used and the memory
// stays reserved; a trim to 0 gives it back; the high-water marks reset
// only to 0 (a non-zero value is CUDA_ERROR_INVALID_VALUE).
func TestConformanceMemPoolStatistics(t *testing.T) {
	testenv.OnPrimary(t, 0)
	props := libcuda.MemPoolProps{
		AllocType: libcuda.CU_MEM_ALLOCATION_TYPE_PINNED,
		Location:  libcuda.MemLocation{Type: libcuda.CU_MEM_LOCATION_TYPE_DEVICE, Id: 0},
	}
	var p libcuda.MemoryPool
	testenv.Must(t, libcuda.MemPoolCreate(&p, &props))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemPoolDestroy(p)) })
	max := uint64(math.MaxUint64)
	testenv.Must(t, libcuda.MemPoolSetAttribute(p, libcuda.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, unsafe.Pointer(&max)))
	if got := poolAttr(t, p, libcuda.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD); got != max {
		t.Errorf("release threshold read back %d, want %d", got, max)
	}
	for _, a := range []libcuda.MemPool_attribute{libcuda.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, libcuda.CU_MEMPOOL_ATTR_USED_MEM_CURRENT} {
		if v := poolAttr(t, p, a); v != 0 {
			t.Errorf("a new pool: %v = %d, want 0", a, v)
		}
	}
	s := testenv.NewStream(t)
	const n = 1 << 20
	var d libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAllocFromPoolAsync(&d, n, p, s))
	testenv.Must(t, libcuda.StreamSynchronize(s))
	used, reserved := poolAttr(t, p, libcuda.CU_MEMPOOL_ATTR_USED_MEM_CURRENT), poolAttr(t, p, libcuda.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
	if used < n || reserved < used {
		t.Errorf("after an allocation of %d bytes: used %d, reserved %d", n, used, reserved)
	}
	testenv.Must(t, libcuda.MemFreeAsync(d, s))
	testenv.Must(t, libcuda.StreamSynchronize(s))
	used, reserved = poolAttr(t, p, libcuda.CU_MEMPOOL_ATTR_USED_MEM_CURRENT), poolAttr(t, p, libcuda.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
	if used != 0 || reserved < n {
		t.Errorf("after the free, threshold at the maximum: used %d, reserved %d; want 0 and at least %d", used, reserved, n)
	}
	if h := poolAttr(t, p, libcuda.CU_MEMPOOL_ATTR_USED_MEM_HIGH); h < n {
		t.Errorf("used high-water mark %d after an allocation of %d", h, n)
	}
	testenv.Must(t, libcuda.MemPoolTrimTo(p, 0))
	if r := poolAttr(t, p, libcuda.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT); r != 0 {
		t.Errorf("after cuMemPoolTrimTo(0) with nothing used: reserved %d, want 0", r)
	}
	one, zero := uint64(1), uint64(0)
	if got := code(libcuda.MemPoolSetAttribute(p, libcuda.CU_MEMPOOL_ATTR_USED_MEM_HIGH, unsafe.Pointer(&one))); got != 1 {
		t.Errorf("setting the used high-water mark to 1 = %d, want 1", got)
	}
	testenv.Must(t, libcuda.MemPoolSetAttribute(p, libcuda.CU_MEMPOOL_ATTR_USED_MEM_HIGH, unsafe.Pointer(&zero)))
	testenv.Must(t, libcuda.MemPoolSetAttribute(p, libcuda.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, unsafe.Pointer(&zero)))
	if h := poolAttr(t, p, libcuda.CU_MEMPOOL_ATTR_USED_MEM_HIGH); h != 0 {
		t.Errorf("used high-water mark after its reset, nothing used: %d, want 0", h)
	}
	if h := poolAttr(t, p, libcuda.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH); h != 0 {
		t.Errorf("reserved high-water mark after its reset, nothing reserved: %d, want 0", h)
	}
}

func rangeAttr(t *testing.T, p libcuda.Deviceptr, n uint64, a libcuda.Mem_range_attribute) int32 {
	t.Helper()
	var v int32
	testenv.Must(t, libcuda.MemRangeGetAttribute(unsafe.Pointer(&v), 4, a, p, n))
	return v
}

// Managed memory: never prefetched, its last prefetch location is
// CU_DEVICE_INVALID (-2); after a prefetch to device 0 it is 0, to the
// host CU_DEVICE_CPU (-1), without waiting for the prefetch; advice reads
// back; a prefetch with flags is CUDA_ERROR_INVALID_VALUE. 4 KiB only.
func TestConformanceManagedPrefetchAndAdvice(t *testing.T) {
	testenv.OnPrimary(t, 0)
	var concurrent int32
	testenv.Must(t, libcuda.DeviceGetAttribute(&concurrent, libcuda.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 0))
	if concurrent == 0 {
		t.Fatal("device 0 has no concurrent managed access: the H200 on x86 and the simulator have it")
	}
	const n = 4096
	var p libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAllocManaged(&p, n, uint32(libcuda.CU_MEM_ATTACH_GLOBAL)))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemFree(p)) })
	if v := rangeAttr(t, p, n, libcuda.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION); v != -2 {
		t.Errorf("last prefetch location before any prefetch = %d, want -2 (CU_DEVICE_INVALID)", v)
	}
	s := testenv.NewStream(t)
	dev0 := libcuda.MemLocation{Type: libcuda.CU_MEM_LOCATION_TYPE_DEVICE, Id: 0}
	host := libcuda.MemLocation{Type: libcuda.CU_MEM_LOCATION_TYPE_HOST}
	testenv.Must(t, libcuda.MemPrefetchAsync(p, n, dev0, 0, s))
	if v := rangeAttr(t, p, n, libcuda.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION); v != 0 {
		t.Errorf("after a prefetch to device 0: %d, want 0", v)
	}
	testenv.Must(t, libcuda.MemPrefetchAsync(p, n, host, 0, s))
	if v := rangeAttr(t, p, n, libcuda.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION); v != -1 {
		t.Errorf("after a prefetch to the host: %d, want -1 (CU_DEVICE_CPU)", v)
	}
	testenv.Must(t, libcuda.StreamSynchronize(s))
	if got := code(libcuda.MemPrefetchAsync(p, n, dev0, 1, s)); got != 1 {
		t.Errorf("a prefetch with flags 1 = %d, want 1", got)
	}
	testenv.Must(t, libcuda.MemAdvise(p, n, libcuda.CU_MEM_ADVISE_SET_READ_MOSTLY, dev0))
	if v := rangeAttr(t, p, n, libcuda.CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY); v != 1 {
		t.Errorf("read mostly after its advice = %d, want 1", v)
	}
	testenv.Must(t, libcuda.MemAdvise(p, n, libcuda.CU_MEM_ADVISE_UNSET_READ_MOSTLY, dev0))
	if v := rangeAttr(t, p, n, libcuda.CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY); v != 0 {
		t.Errorf("read mostly after its unset = %d, want 0", v)
	}
	if v := rangeAttr(t, p, n, libcuda.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION); v != -2 {
		t.Errorf("preferred location before any advice = %d, want -2 (CU_DEVICE_INVALID)", v)
	}
	testenv.Must(t, libcuda.MemAdvise(p, n, libcuda.CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev0))
	if v := rangeAttr(t, p, n, libcuda.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION); v != 0 {
		t.Errorf("preferred location after advising device 0 = %d, want 0", v)
	}
}

// A 2D copy: rows land at the destination's pitch and leave its padding
// alone; a pitch under the width is CUDA_ERROR_INVALID_VALUE; nothing to
// copy (width 0) succeeds.
func TestConformanceCopy2D(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	const w, h, pitch = 12, 3, 64
	var d libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&d, pitch*h))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemFree(d)) })
	testenv.Must(t, libcuda.MemsetD8Async(d, 0xee, pitch*h, s))
	src := make([]byte, w*h)
	for i := range src {
		src[i] = byte(i + 1)
	}
	c := libcuda.CUDA_MEMCPY2D{
		SrcMemoryType: libcuda.CU_MEMORYTYPE_HOST, SrcHost: unsafe.Pointer(&src[0]), SrcPitch: w,
		DstMemoryType: libcuda.CU_MEMORYTYPE_DEVICE, DstDevice: d, DstPitch: pitch,
		WidthInBytes: w, Height: h,
	}
	testenv.Must(t, libcuda.Memcpy2DAsync(&c, s))
	testenv.Must(t, libcuda.StreamSynchronize(s))
	all := make([]byte, pitch*h)
	testenv.Must(t, libcuda.MemcpyDtoH(unsafe.Pointer(&all[0]), d, pitch*h))
	for y := range h {
		for x := range pitch {
			want := byte(0xee)
			if x < w {
				want = src[y*w+x]
			}
			if got := all[y*pitch+x]; got != want {
				t.Fatalf("row %d byte %d = %#x, want %#x", y, x, got, want)
			}
		}
	}
	bad := c
	bad.SrcPitch = w - 1
	if got := code(libcuda.Memcpy2DAsync(&bad, s)); got != 1 {
		t.Errorf("cuMemcpy2DAsync with a source pitch under the width = %d, want 1", got)
	}
	none := c
	none.WidthInBytes = 0
	testenv.Must(t, libcuda.Memcpy2DAsync(&none, s))
	testenv.Must(t, libcuda.StreamSynchronize(s))
}
