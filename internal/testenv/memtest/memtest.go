// Package memtest holds the test helpers around hostmem's releases that
// the tests of several packages share (hostmem's own and those of tests/).
// It lies apart from package testenv, which every package's tests import,
// so that testenv itself depends on no package of the binding but libcuda.
package memtest

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// Drain waits for every release and lease (graph.Drain, then
// hostmem.Drain, within three Timeouts), and fails t unless no
// registration and no release is left.
func Drain(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*testenv.Timeout)
	defer cancel()
	testenv.Must(t, graph.Drain(ctx))
	testenv.Must(t, hostmem.Drain(ctx))
	if st := hostmem.ReadStats(); st.Registrations != 0 || st.Pending != 0 {
		t.Fatalf("after Drain: %+v", st)
	}
}

// DrainReleases runs hostmem.Drain within Timeout; unlike Drain, it
// accepts registrations that stay (leased to a graph, or kept).
func DrainReleases(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	testenv.Must(t, hostmem.Drain(ctx))
}

// StillHeld checks, after giving the reaper time to be wrong, that the one
// buffer whose work is held is neither released nor unregistered.
func StillHeld(t testing.TB) {
	t.Helper()
	time.Sleep(20 * time.Millisecond)
	if st := hostmem.ReadStats(); st.Pending != 1 || st.Registrations != 1 {
		t.Fatalf("while the buffer's work is held: %+v; want its release pending and its registration kept", st)
	}
}

// SumSetup makes n int64 values 1..n and returns them with their sum.
func SumSetup(n int) ([]int64, int64) {
	v := make([]int64, n)
	var sum int64
	for i := range v {
		v[i] = int64(i + 1)
		sum += v[i]
	}
	return v, sum
}

// SumOnDevice launches sum_i64 of module m over the n int64s of b on
// stream s (after spinning for spin) into out.
func SumOnDevice(t testing.TB, m libcuda.Module, s libcuda.Stream, b *hostmem.Buffer, n int, out libcuda.Deviceptr, spin time.Duration) {
	t.Helper()
	k := testenv.Kernel(t, m, "sum_i64")
	testenv.Must(t, k.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 256}, 0, s, b.DevicePtr(), uint64(n), out, uint64(spin)))
}

// ReadInt64 copies the int64 at d to the host.
func ReadInt64(t testing.TB, d libcuda.Deviceptr) int64 {
	t.Helper()
	var v int64
	testenv.Must(t, libcuda.MemcpyDtoH(unsafe.Pointer(&v), d, 8))
	return v
}

// DeviceInt64 allocates 8 bytes of device memory, freed when t ends.
func DeviceInt64(t testing.TB) libcuda.Deviceptr {
	t.Helper()
	var d libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&d, 8))
	testenv.Fenced(t, func() { testenv.Must(t, libcuda.MemFree(d)) })
	return d
}
