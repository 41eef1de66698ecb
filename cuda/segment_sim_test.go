//go:build !gpu

package cuda_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// A failed driver call in a copy of a Buffer over two registrations is
// an error that names the call; a later copy of the same Buffer works, and
// a freed one is ErrFreed without a call.
func TestCopyOfABufferOverAdjacentRegistrationsFails(t *testing.T) {
	f := newFixture(t)
	const n, split = 1000, 400
	host := make([]int32, n)
	for i := range host {
		host[i] = int32(i)
	}
	whole := wrapHalvesThenWhole(t, f, host, split)
	x, err := cuda.Alloc[int32](f.s, n)
	testenv.Must(t, err)
	defer x.Free()
	testenv.Must(t, cuda.Zero(f.s, x))

	testenv.SimFailNext(t, "cuMemcpyHtoDAsync", 1, libcuda.CUDA_ERROR_INVALID_VALUE)
	err = cuda.CopyToDevice(f.s, x, whole)
	if !errors.Is(err, libcuda.CUDA_ERROR_INVALID_VALUE) || !strings.Contains(err.Error(), "cuMemcpyHtoDAsync") {
		t.Fatalf("CopyToDevice with its first call failing = %v, want CUDA_ERROR_INVALID_VALUE naming cuMemcpyHtoDAsync", err)
	}
	if got := read(t, f.s, x); got[0] != 0 || got[n-1] != 0 {
		t.Fatalf("after the failed copy x[0], x[%d] = %d, %d; want nothing copied", n-1, got[0], got[n-1])
	}
	testenv.SimFailNext(t, "cuMemcpyDtoHAsync", 1, libcuda.CUDA_ERROR_UNKNOWN)
	err = cuda.CopyToHost(f.s, whole, x)
	if !errors.Is(err, libcuda.CUDA_ERROR_UNKNOWN) || !strings.Contains(err.Error(), "cuMemcpyDtoHAsync") {
		t.Fatalf("CopyToHost with its first call failing = %v, want CUDA_ERROR_UNKNOWN naming cuMemcpyDtoHAsync", err)
	}
	sync(t, f.s)
	if host[n-1] != n-1 {
		t.Fatalf("after the failed copy host[%d] = %d, want it untouched", n-1, host[n-1])
	}

	testenv.Must(t, cuda.CopyToDevice(f.s, x, whole))
	for i, v := range read(t, f.s, x) {
		if v != int32(i) {
			t.Fatalf("element %d = %d after the copy that worked, want %d", i, v, i)
		}
	}
	testenv.Must(t, whole.Free())
	if err := cuda.CopyToDevice(f.s, x, whole); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("copy of a freed Buffer over two registrations: %v, want ErrFreed", err)
	}
}
