package cuda_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
)

func TestCopyRoundTripPageable(t *testing.T) {
	f := newFixture(t)
	want := []int64{1, -2, 3, 1 << 40}
	x := alloc(t, f.s, want)
	if got := read(t, f.s, x); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestCopyRoundTripPinned(t *testing.T) {
	f := newFixture(t)
	in, err := cuda.AllocPinned[float32](f.ctx, 5)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "in.Free", in.Free)
	copy(in.Data(), []float32{1, 2, 3, 4, 5})
	out, err := cuda.Pin(f.ctx, make([]float32, 5))
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "out.Free", out.Free)
	x, err := cuda.Alloc[float32](f.s, 5)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "x.Free", x.Free)
	testenv.Must(t, cuda.CopyToDevice(f.s, x, in))
	testenv.Must(t, cuda.CopyToHost(f.s, out, x))
	sync(t, f.s)
	if !slices.Equal(out.Data(), in.Data()) {
		t.Errorf("got %v, want %v", out.Data(), in.Data())
	}
}

func TestCopyFromHostmemBuffer(t *testing.T) {
	f := newFixture(t)
	host := []int32{7, 8, 9}
	b, err := hostmem.Wrap(f.ctx.Raw(), host)
	testenv.Must(t, err)
	x, err := cuda.Alloc[int32](f.s, 3)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "x.Free", x.Free)
	testenv.Must(t, cuda.CopyToDevice(f.s, x, b))
	testenv.MustBounded(t, "b.Free", b.Free) // the release waits for the copy, recorded as a use
	if got := read(t, f.s, x); !slices.Equal(got, host) {
		t.Errorf("got %v, want %v", got, host)
	}
	if err := testenv.BoundedErr(t, "cuda.CopyToHost", func() error { return cuda.CopyToHost(f.s, b, x) }); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("copy into a freed buffer: %v, want ErrFreed", err)
	}
}

func TestCopyDeviceToDeviceAndSubslices(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, []int32{0, 1, 2, 3, 4, 5})
	y := alloc(t, f.s, []int32{9, 9, 9, 9})
	xs, err := x.Slice(2, 5)
	testenv.Must(t, err)
	ys, err := y.Slice(1, 4)
	testenv.Must(t, err)
	testenv.Must(t, cuda.Copy(f.s, ys, xs))
	if got := read(t, f.s, y); !slices.Equal(got, []int32{9, 2, 3, 4}) {
		t.Errorf("got %v", got)
	}
	x01, err := x.Slice(0, 2)
	testenv.Must(t, err)
	x45, err := x.Slice(4, 6)
	testenv.Must(t, err)
	testenv.Must(t, cuda.Copy(f.s, x01, x45))
	if got := read(t, f.s, x); !slices.Equal(got, []int32{4, 5, 2, 3, 4, 5}) {
		t.Errorf("a copy within one allocation: %v", got)
	}
	if err := cuda.Copy(f.s, xs, xs); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("an overlapping copy: %v, want ErrLength", err)
	}
	if xs.Len() != 3 || xs.Bytes() != 12 {
		t.Errorf("Len %d Bytes %d", xs.Len(), xs.Bytes())
	}
}

func TestMemsetAndZero(t *testing.T) {
	f := newFixture(t)
	b := alloc(t, f.s, []uint8{1, 2, 3})
	testenv.Must(t, cuda.Memset(f.s, b, 0xab))
	h := alloc(t, f.s, []int16{1, 2, 3})
	testenv.Must(t, cuda.Memset(f.s, h, -2))
	w := alloc(t, f.s, []float32{1, 2, 3})
	w1, err := w.Slice(1, 3)
	testenv.Must(t, err)
	testenv.Must(t, cuda.Memset(f.s, w1, 0.5))
	type pair struct{ A, B float64 }
	z := alloc(t, f.s, []pair{{1, 2}, {3, 4}})
	testenv.Must(t, cuda.Zero(f.s, z))
	if got := read(t, f.s, b); !slices.Equal(got, []uint8{0xab, 0xab, 0xab}) {
		t.Errorf("Memset bytes: %v", got)
	}
	if got := read(t, f.s, h); !slices.Equal(got, []int16{-2, -2, -2}) {
		t.Errorf("Memset int16: %v", got)
	}
	if got := read(t, f.s, w); !slices.Equal(got, []float32{1, 0.5, 0.5}) {
		t.Errorf("Memset float32: %v", got)
	}
	if got := read(t, f.s, z); !slices.Equal(got, []pair{{}, {}}) {
		t.Errorf("Zero: %v", got)
	}
	if err := cuda.Memset(f.s, z, pair{-1, -1}); err == nil { // 0xbff0000000000000: no pattern
		t.Error("Memset of a value without a pattern: no error")
	}
	if err := cuda.Memset(f.s, z, pair{1, 2}); err == nil {
		t.Error("Memset of a value without a pattern: no error")
	}
	l := alloc(t, f.s, []int64{1, 2, 3})
	testenv.Must(t, cuda.Memset(f.s, l, -1))
	if got := read(t, f.s, l); !slices.Equal(got, []int64{-1, -1, -1}) {
		t.Errorf("Memset int64 -1: %v", got)
	}
	p := alloc(t, f.s, []uint64{1, 2})
	testenv.Must(t, cuda.Memset(f.s, p, 0x0102030401020304))
	if got := read(t, f.s, p); !slices.Equal(got, []uint64{0x0102030401020304, 0x0102030401020304}) {
		t.Errorf("Memset of a 4-byte pattern: %x", got)
	}
}

func TestLengthsAndRangesAreChecked(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, make([]float32, 4))
	for _, r := range [][2]int{{-1, 2}, {3, 2}, {0, 5}, {5, 5}} {
		if _, err := x.Slice(r[0], r[1]); !errors.Is(err, cuda.ErrLength) {
			t.Errorf("Slice(%d, %d): %v, want ErrLength", r[0], r[1], err)
		}
	}
	empty, err := x.Slice(4, 4)
	testenv.Must(t, err)
	if empty.Len() != 0 {
		t.Errorf("Slice(4, 4) has length %d", empty.Len())
	}
	if err := cuda.CopyToDevice(f.s, x, make([]float32, 3)); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("CopyToDevice of 3 into 4: %v, want ErrLength", err)
	}
	if err := cuda.CopyToHost(f.s, make([]float32, 5), x); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("CopyToHost of 4 into 5: %v, want ErrLength", err)
	}
	y := alloc(t, f.s, make([]float32, 3))
	if err := cuda.Copy(f.s, x, y); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("Copy of 3 into 4: %v, want ErrLength", err)
	}
	if _, err := cuda.Alloc[float32](f.s, -1); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("Alloc(-1): %v, want ErrLength", err)
	}
}

func TestAllocRefusesTypesWithPointers(t *testing.T) {
	f := newFixture(t)
	type withPtr struct {
		A int
		B *int
	}
	if _, err := cuda.Alloc[withPtr](f.s, 1); !errors.Is(err, cuda.ErrElemType) {
		t.Errorf("Alloc of a struct with a pointer: %v, want ErrElemType", err)
	}
	if _, err := cuda.Alloc[string](f.s, 1); !errors.Is(err, cuda.ErrElemType) {
		t.Errorf("Alloc[string]: %v, want ErrElemType", err)
	}
	if _, err := cuda.Alloc[[2][]byte](f.s, 1); !errors.Is(err, cuda.ErrElemType) {
		t.Errorf("Alloc of arrays of slices: %v, want ErrElemType", err)
	}
	if _, err := cuda.Alloc[struct{}](f.s, 1); !errors.Is(err, cuda.ErrElemType) {
		t.Errorf("Alloc of a zero-size type: %v, want ErrElemType", err)
	}
	if _, err := cuda.Pin(f.ctx, []*int{nil}); !errors.Is(err, cuda.ErrElemType) {
		t.Errorf("Pin of pointers: %v, want ErrElemType", err)
	}
}

func TestUseAfterFreeIsAnError(t *testing.T) {
	f := newFixture(t)
	x, err := cuda.Alloc[float32](f.s, 4)
	testenv.Must(t, err)
	part, err := x.Slice(1, 3)
	testenv.Must(t, err)
	if err := testenv.BoundedErr(t, "part.Free", part.Free); err == nil || errors.Is(err, cuda.ErrFreed) {
		t.Errorf("Free of a part: %v, want an error", err)
	}
	testenv.MustBounded(t, "x.Free", x.Free)
	if err := testenv.BoundedErr(t, "x.Free", x.Free); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("second Free: %v, want ErrFreed", err)
	}
	if err := testenv.BoundedErr(t, "cuda.CopyToDevice", func() error { return cuda.CopyToDevice(f.s, x, make([]float32, 4)) }); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("copy after Free: %v, want ErrFreed", err)
	}
	if err := testenv.BoundedErr(t, "cuda.CopyToHost", func() error { return cuda.CopyToHost(f.s, make([]float32, 2), part) }); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("copy from a part after Free: %v, want ErrFreed", err)
	}
	if err := testenv.BoundedErr(t, "cuda.Memset", func() error { return cuda.Memset(f.s, x, 1) }); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("Memset after Free: %v, want ErrFreed", err)
	}
	saxpy := f.fn(t, "saxpy")
	if err := testenv.BoundedErr(t, "f.s.Launch", func() error {
		return f.s.Launch(saxpy, cuda.Grid(1, 1, 1), cuda.Block(4, 1, 1), cuda.Int32(4), cuda.Float32(1), x.Arg(), x.Arg())
	}); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("launch after Free: %v, want ErrFreed", err)
	}
	if x.DevicePtr() != 0 {
		t.Error("DevicePtr after Free is not 0")
	}
	var zero cuda.Slice[float32]
	if err := cuda.CopyToDevice(f.s, zero, []float32(nil)); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("copy into a zero Slice: %v, want ErrNil", err)
	}
	if err := testenv.BoundedErr(t, "zero.Free", zero.Free); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("Free of a zero Slice: %v, want ErrNil", err)
	}
}
