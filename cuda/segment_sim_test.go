//go:build !gpu

package cuda_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/hostmem"
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
	whole := wrapHalvesThenWhole(t, f, host, split)[2]
	x, err := cuda.Alloc[int32](f.s, n)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "x.Free", x.Free)
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
	testenv.MustBounded(t, "whole.Free", whole.Free)
	if err := testenv.BoundedErr(t, "cuda.CopyToDevice", func() error { return cuda.CopyToDevice(f.s, x, whole) }); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("copy of a freed Buffer over two registrations: %v, want ErrFreed", err)
	}
}

// When the call for the second registration fails, the first one's copy
// is on the stream already: the error names the call, and the copy is
// recorded as a use of the Buffer all the same. The release of a Buffer
// without uses waits for its whole context; with the use, it waits for the
// copy's stream alone: another stream of the context, held, does not keep
// it.
func TestCopyOfABufferWhoseSecondSegmentFailsRecordsTheUse(t *testing.T) {
	f := newFixture(t)
	const n, split = 1000, 400
	host := make([]int32, n)
	for i := range host {
		host[i] = int32(i + 1)
	}
	bufs := wrapHalvesThenWhole(t, f, host, split)
	x, err := cuda.Alloc[int32](f.s, n)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "x.Free", x.Free)
	testenv.Must(t, cuda.Zero(f.s, x))
	other := newStream(t, f.ctx)
	var g *testenv.Gate
	testenv.Must(t, f.ctx.Do(func() error { g = testenv.NewGate(t); return nil }))
	g.Hold(t, other.Raw())

	testenv.SimFailAfter(t, "cuMemcpyHtoDAsync", 1, 1, libcuda.CUDA_ERROR_INVALID_VALUE)
	err = cuda.CopyToDevice(f.s, x, bufs[2])
	if !errors.Is(err, libcuda.CUDA_ERROR_INVALID_VALUE) || !strings.Contains(err.Error(), "cuMemcpyHtoDAsync") {
		t.Fatalf("CopyToDevice with its second call failing = %v, want CUDA_ERROR_INVALID_VALUE naming cuMemcpyHtoDAsync", err)
	}
	got := read(t, f.s, x)
	for i, v := range got {
		want := int32(0)
		if i < split {
			want = int32(i + 1)
		}
		if v != want {
			t.Fatalf("element %d = %d, want %d (the first segment copied, the second not)", i, v, want)
		}
	}
	for _, b := range bufs {
		testenv.MustBounded(t, "b.Free", b.Free)
	}
	// The halves, never used, wait for the held context; the whole does not.
	testenv.Eventually(t, "the whole's release ended while another stream is held",
		func() bool { return hostmem.ReadStats().Pending <= 2 })
	g.Open()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	testenv.Must(t, hostmem.Drain(ctx))
	if st := hostmem.ReadStats(); st.Pending != 0 {
		t.Fatalf("after the gate opened and Drain: %+v; want no release pending", st)
	}
}
