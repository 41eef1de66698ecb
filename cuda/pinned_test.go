package cuda_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
)

// A copy from Data()[a:b] is a use of the Pinned: its Free waits for the
// copy's stream, and only for it. Without the lookup no use is recorded,
// and the release waits for the whole context instead (for the other held
// stream too).
func TestPinnedFreeWaitsForACopyFromASubsliceOfData(t *testing.T) {
	testenv.OnPrimary(t, 0)
	f := newFixture(t)
	s := newStream(t, f.ctx, cuda.NonBlocking())
	other := newStream(t, f.ctx, cuda.NonBlocking())
	host := make([]int32, 64)
	for i := range host {
		host[i] = int32(i)
	}
	p, err := cuda.Pin(f.ctx, host)
	testenv.Must(t, err)
	x := alloc(t, s, make([]int32, 16))
	sync(t, s)
	gate, otherGate := testenv.NewGate(t), testenv.NewGate(t)
	gate.Hold(t, s.Raw())
	otherGate.Hold(t, other.Raw())
	testenv.Must(t, cuda.CopyToDevice(s, x, p.Data()[8:24]))
	testenv.MustBounded(t, "p.Free", p.Free)
	if n := hostmem.ReadStats().Pending; n == 0 {
		t.Fatal("the Pinned was released while a copy from it is held")
	}
	gate.Open()
	testenv.Eventually(t, "the release after the copy's stream ran, the other stream still held",
		func() bool { return hostmem.ReadStats().Pending == 0 })
	if got := read(t, s, x); !slices.Equal(got, host[8:24]) {
		t.Errorf("copied %v, want %v", got, host[8:24])
	}
	otherGate.Open()
}

// CopyToHost into Data()[a:b] is asynchronous, as into the Pinned: it
// returns while the stream is held (into pageable memory it would wait).
func TestCopyToHostIntoASubsliceOfDataIsAsynchronous(t *testing.T) {
	testenv.OnPrimary(t, 0)
	f := newFixture(t)
	s := newStream(t, f.ctx, cuda.NonBlocking())
	p, err := cuda.AllocPinned[int32](f.ctx, 32)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "p.Free", p.Free)
	want := []int32{5, 6, 7, 8}
	x := alloc(t, s, want)
	sync(t, s)
	gate := testenv.NewGate(t)
	gate.Hold(t, s.Raw())
	done := testenv.WaitAsync(func() error { return cuda.CopyToHost(s, p.Data()[4:8], x) })
	testenv.Finished(t, "CopyToHost into Data()[4:8] of a held stream", done)
	gate.Open()
	sync(t, s)
	if got := p.Data()[4:8]; !slices.Equal(got, want) {
		t.Errorf("after Sync: %v, want %v", got, want)
	}
}

func TestPinnedViews(t *testing.T) {
	f := newFixture(t)
	p, err := cuda.AllocPinned[int32](f.ctx, 10)
	testenv.Must(t, err)
	v, err := p.Slice(2, 6)
	testenv.Must(t, err)
	if v.Len() != 4 || &v.Data()[0] != &p.Data()[2] {
		t.Fatalf("Slice(2, 6): length %d, not over p's memory", v.Len())
	}
	vv, err := v.Slice(1, 3)
	testenv.Must(t, err)
	x := alloc(t, f.s, []int32{11, 12})
	testenv.Must(t, cuda.CopyToHost(f.s, vv, x))
	sync(t, f.s)
	if got := p.Data()[3:5]; !slices.Equal(got, []int32{11, 12}) {
		t.Errorf("a view of a view copied into elements 3, 4: %v", got)
	}
	// A kernel given a view's Arg works on the view's elements.
	testenv.Must(t, f.s.Launch(f.fn(t, "add_one_i32"), cuda.Grid(1, 1, 1), cuda.Block(2, 1, 1), vv.Arg(), cuda.Uint64(2)))
	sync(t, f.s)
	if got := p.Data()[2:6]; !slices.Equal(got, []int32{0, 12, 13, 0}) {
		t.Errorf("add_one on view [3:5]: p[2:6] = %v, want [0 12 13 0]", got)
	}
	for _, r := range [][2]int{{-1, 2}, {3, 2}, {2, 2}, {0, 11}} {
		if _, err := p.Slice(r[0], r[1]); !errors.Is(err, cuda.ErrLength) {
			t.Errorf("Slice(%d, %d): %v, want ErrLength", r[0], r[1], err)
		}
	}
	if err := testenv.BoundedErr(t, "v.Free", v.Free); err == nil {
		t.Error("Free of a view succeeded")
	}
	// A []T that runs past the end of the pinned memory is refused.
	big := make([]int32, 20)
	q, err := cuda.Pin(f.ctx, big[:10])
	testenv.Must(t, err)
	y := alloc(t, f.s, make([]int32, 4))
	if err := cuda.CopyToDevice(f.s, y, big[8:12]); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("a copy from a []T over the end of pinned memory: %v, want ErrLength", err)
	}
	testenv.MustBounded(t, "q.Free", q.Free)
	testenv.MustBounded(t, "p.Free", p.Free)
	if err := testenv.BoundedErr(t, "cuda.CopyToHost", func() error { return cuda.CopyToHost(f.s, v, y) }); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("a copy into a view of a freed Pinned: %v, want ErrFreed", err)
	}
	sync(t, f.s)
}

func TestPinnedFromAHostmemBuffer(t *testing.T) {
	f := newFixture(t)
	host := []float32{1, 2, 3, 4, 5, 6}
	b, err := hostmem.Wrap(f.ctx.Raw(), host)
	testenv.Must(t, err)
	p, err := cuda.PinnedFrom[float32](b)
	testenv.Must(t, err)
	v, err := p.Slice(2, 5)
	testenv.Must(t, err)
	x := alloc(t, f.s, make([]float32, 3))
	testenv.Must(t, cuda.CopyToDevice(f.s, x, v))
	if got := read(t, f.s, x); !slices.Equal(got, host[2:5]) {
		t.Errorf("from a view of a Buffer: %v, want %v", got, host[2:5])
	}
	if err := testenv.BoundedErr(t, "p.Free", p.Free); err == nil {
		t.Error("Free of a Buffer's view succeeded")
	}
	if _, err := cuda.PinnedFrom[[4]float64](b); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("PinnedFrom of 24 bytes as 32-byte elements: %v, want ErrLength", err)
	}
	testenv.MustBounded(t, "b.Free", b.Free)
	if _, err := cuda.PinnedFrom[float32](b); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("PinnedFrom a freed Buffer: %v, want ErrFreed", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	testenv.Must(t, hostmem.Drain(ctx))
}
