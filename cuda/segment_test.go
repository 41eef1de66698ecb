package cuda_test

import (
	"context"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
)

// wrapHalvesThenWhole wraps the two halves of host separately, then the
// whole, and returns the three Buffers in that order: the last spans both
// registrations (hostmem's doc, "Adjacent registrations"). All three are
// freed, and drained, when the test ends.
func wrapHalvesThenWhole[T any](t *testing.T, f *fixture, host []T, split int) []*hostmem.Buffer {
	t.Helper()
	var bufs []*hostmem.Buffer
	t.Cleanup(func() {
		for _, b := range bufs {
			testenv.MustBounded(t, "b.Free", b.Free)
		}
		ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
		defer cancel()
		testenv.Must(t, hostmem.Drain(ctx))
	})
	for _, part := range [][]T{host[:split], host[split:], host} {
		b, err := hostmem.Wrap(f.ctx.Raw(), part)
		testenv.Must(t, err)
		bufs = append(bufs, b)
	}
	return bufs
}

// A Buffer over two adjacent registrations is copied to and from the
// device in one driver call per registration (the driver refuses one call
// over both), with the data intact.
func TestCopyOfABufferOverAdjacentRegistrations(t *testing.T) {
	f := newFixture(t)
	const n, split = 3000, 1234 // the boundary inside a page
	host := make([]int32, n)
	for i := range host {
		host[i] = int32(i * 7)
	}
	whole := wrapHalvesThenWhole(t, f, host, split)[2]
	if seg, err := whole.Segment(0); err != nil || seg != split*4 {
		t.Fatalf("Segment(0) = %d, %v; want %d (the first registration)", seg, err, split*4)
	}
	x, err := cuda.Alloc[int32](f.s, n)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "x.Free", x.Free)
	testenv.Must(t, cuda.CopyToDevice(f.s, x, whole))
	got := read(t, f.s, x)
	for i, v := range got {
		if v != int32(i*7) {
			t.Fatalf("device element %d = %d after CopyToDevice, want %d", i, v, i*7)
		}
	}

	testenv.Must(t, cuda.Memset(f.s, x, int32(-5)))
	testenv.Must(t, cuda.CopyToHost(f.s, whole, x))
	sync(t, f.s)
	for i, v := range host {
		if v != -5 {
			t.Fatalf("host element %d = %d after CopyToHost, want -5", i, v)
		}
	}

	// Through a Pin of the whole (the same two registrations again).
	p, err := cuda.Pin(f.ctx, host)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "p.Free", p.Free)
	lo, err := x.Slice(0, split)
	testenv.Must(t, err)
	hi, err := x.Slice(split, n)
	testenv.Must(t, err)
	testenv.Must(t, cuda.Memset(f.s, lo, int32(1)))
	testenv.Must(t, cuda.Memset(f.s, hi, int32(2)))
	testenv.Must(t, cuda.CopyToHost(f.s, p, x))
	sync(t, f.s)
	for i, v := range host {
		want := int32(1)
		if i >= split {
			want = 2
		}
		if v != want {
			t.Fatalf("host element %d = %d after CopyToHost through a Pin, want %d", i, v, want)
		}
	}
}
