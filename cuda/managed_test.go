package cuda_test

import (
	"errors"
	"runtime"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// Managed memory written on the host, prefetched to the device, changed
// by a kernel and read on the host again; prefetch and advice are
// recorded where the driver says; every use after Free is an error.
// Small: never more managed memory than the card has.
func TestManagedMemoryHostKernelHostWithPrefetch(t *testing.T) {
	f := newFixture(t)
	d := f.ctx.Device()
	const n = 4096
	m, err := cuda.AllocManaged[int32](f.ctx, n, cuda.AttachGlobal)
	testenv.Must(t, err)
	if m.Len() != n || m.Slice().Device() != d {
		t.Fatalf("AllocManaged: length %d, device %d", m.Len(), m.Slice().Device().Ordinal())
	}
	if _, ok, err := m.LastPrefetch(); err != nil || ok {
		t.Errorf("LastPrefetch of memory never prefetched: ok %v, %v", ok, err)
	}
	for i := range m.Data() {
		m.Data()[i] = int32(i)
	}
	concurrent, err := d.ConcurrentManagedAccess()
	testenv.Must(t, err)
	if !concurrent {
		if err := m.Prefetch(f.s, cuda.OnDevice(d)); !errors.Is(err, cuda.ErrNotSupported) {
			t.Fatalf("Prefetch without concurrent managed access: %v, want ErrNotSupported", err)
		}
	} else {
		testenv.Must(t, m.Advise(cuda.PreferredLocation, cuda.OnDevice(d)))
		testenv.Must(t, m.Advise(cuda.AccessedBy, cuda.OnHost()))
		testenv.Must(t, m.Advise(cuda.ReadMostly, cuda.Location{}))
		testenv.Must(t, m.Advise(cuda.UnsetReadMostly, cuda.Location{}))
		testenv.Must(t, m.Prefetch(f.s, cuda.OnDevice(d)))
		loc, ok, err := m.LastPrefetch()
		testenv.Must(t, err)
		if !ok || loc.IsHost() || loc.Device() != d {
			t.Errorf("after a prefetch to device %d, LastPrefetch = %v (ok %v)", d.Ordinal(), loc, ok)
		}
	}
	testenv.Must(t, f.s.Launch(f.fn(t, "add_one_i32"), cuda.Grid(n/256, 1, 1), cuda.Block(256, 1, 1), m.Arg(), cuda.Uint64(n)))
	if concurrent {
		testenv.Must(t, m.Prefetch(f.s, cuda.OnHost()))
	}
	sync(t, f.s)
	for i, v := range m.Data() {
		if v != int32(i+1) {
			t.Fatalf("element %d = %d after add_one, want %d", i, v, i+1)
		}
	}
	if concurrent {
		loc, ok, err := m.LastPrefetch()
		testenv.Must(t, err)
		if !ok || !loc.IsHost() {
			t.Errorf("after a prefetch to the host, LastPrefetch = %v (ok %v)", loc, ok)
		}
	}
	// A device copy out of it sees the same memory.
	if got := read(t, f.s, m.Slice())[:4]; !slices.Equal(got, []int32{1, 2, 3, 4}) {
		t.Errorf("CopyToHost from the managed Slice: %v", got)
	}
	testenv.MustBounded(t, "m.Free", m.Free)
	if err := testenv.BoundedErr(t, "m.Free", m.Free); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("second Free: %v, want ErrFreed", err)
	}
	if err := testenv.BoundedErr(t, "cuda.CopyToHost", func() error { return cuda.CopyToHost(f.s, make([]int32, n), m.Slice()) }); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("a copy after Free: %v, want ErrFreed", err)
	}
	if err := testenv.BoundedErr(t, "f.s.Launch", func() error {
		return f.s.Launch(f.fn(t, "add_one_i32"), cuda.Grid(1, 1, 1), cuda.Block(1, 1, 1), m.Arg(), cuda.Uint64(1))
	}); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("a launch after Free: %v, want ErrFreed", err)
	}
	if err := m.Prefetch(f.s, cuda.OnHost()); concurrent && !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("a prefetch after Free: %v, want ErrFreed", err)
	}
	if _, err := cuda.AllocManaged[int32](f.ctx, 0, cuda.AttachGlobal); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("AllocManaged of 0: %v, want ErrLength", err)
	}
}

// Managed's queries run in the memory's context, whatever the calling
// thread has current: LastPrefetch on a thread with no context current
// answers (cuMemRangeGetAttribute needs one; it once ran on whatever
// thread the goroutine was on, and failed with CUDA_ERROR_INVALID_CONTEXT
// there).
func TestManagedLastPrefetchNeedsNoCurrentContext(t *testing.T) {
	f := newFixture(t)
	m, err := cuda.AllocManaged[int32](f.ctx, 1024, cuda.AttachGlobal)
	testenv.Must(t, err)
	defer func() { testenv.MustBounded(t, "m.Free", m.Free) }()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var prev libcuda.Context
	testenv.Must(t, libcuda.CtxGetCurrent(&prev))
	testenv.Must(t, libcuda.CtxSetCurrent(0))
	defer testenv.RestoreCurrent(t, prev)
	if _, ok, err := m.LastPrefetch(); err != nil || ok {
		t.Errorf("LastPrefetch with no context current: ok %v, %v; want no prefetch and no error", ok, err)
	}
}
