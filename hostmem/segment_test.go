package hostmem_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
)

// Segment gives the bytes from an offset that one registration covers: a
// wrap over two adjacent registrations has two segments, a wrap of its own
// one.
func TestSegmentFollowsTheRegistrations(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	defer memtest.Drain(t)
	host := make([]int64, 1000)
	lo, err := hostmem.Wrap(cu, host[:300])
	testenv.Must(t, err)
	hi, err := hostmem.Wrap(cu, host[300:])
	testenv.Must(t, err)
	whole, err := hostmem.Wrap(cu, host)
	testenv.Must(t, err)
	for _, c := range []struct {
		b         *hostmem.Buffer
		off, want int
	}{
		{whole, 0, 2400}, {whole, 8, 2392}, {whole, 2399, 1}, {whole, 2400, 5600}, {whole, 7999, 1},
		{lo, 0, 2400}, {hi, 0, 5600}, {hi, 100, 5500},
	} {
		if got, err := c.b.Segment(c.off); err != nil || got != c.want {
			t.Errorf("Segment(%d) of a %d-byte buffer = %d, %v; want %d", c.off, c.b.Size(), got, err, c.want)
		}
	}
	for _, off := range []int{-1, 8000} {
		if _, err := whole.Segment(off); err == nil {
			t.Errorf("Segment(%d) of an 8000-byte buffer: no error", off)
		}
	}
	for _, b := range []*hostmem.Buffer{lo, hi, whole} {
		testenv.MustBounded(t, "b.Free", b.Free)
	}
	if _, err := whole.Segment(0); !errors.Is(err, hostmem.ErrFreed) {
		t.Errorf("Segment after Free: %v, want ErrFreed", err)
	}
}
