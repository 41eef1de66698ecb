package cuda_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// One allocation of bytes carved into a float32 view and an int32 view:
// kernels of each type run on their view, at its address within the arena,
// and the bytes of the arena show what each wrote.
func TestArenaCarvedIntoTypedViews(t *testing.T) {
	f := newFixture(t)
	arena := alloc(t, f.s, make([]byte, 4096))
	fl, err := cuda.ViewAt[float32](arena, 0, 256)
	testenv.Must(t, err)
	in, err := cuda.ViewAt[int32](arena, 1024, 256)
	testenv.Must(t, err)
	if got, want := fl.DevicePtr(), arena.DevicePtr(); got != want {
		t.Errorf("float32 view at %#x, want the arena's %#x", got, want)
	}
	if got, want := in.DevicePtr(), arena.DevicePtr()+1024; got != want {
		t.Errorf("int32 view at %#x, want %#x", got, want)
	}
	if fl.Len() != 256 || in.Len() != 256 || fl.Bytes() != 1024 {
		t.Errorf("views of %d and %d elements (%d bytes), want 256 and 256 (1024)", fl.Len(), in.Len(), fl.Bytes())
	}
	testenv.Must(t, cuda.CopyToDevice(f.s, fl, seq(256, func(i int) float32 { return float32(i) })))
	testenv.Must(t, cuda.Memset(f.s, in, 41))
	testenv.Must(t, f.s.Launch(f.fn(t, "scale<float>"), cuda.Grid(1, 1, 1), cuda.Block(256, 1, 1), fl.Arg(), cuda.Float32(2), cuda.Uint64(256)))
	testenv.Must(t, f.s.Launch(f.fn(t, "add_one_i32"), cuda.Grid(1, 1, 1), cuda.Block(256, 1, 1), in.Arg(), cuda.Uint64(256)))
	bytes := read(t, f.s, arena)
	for i := range 256 {
		if got := math.Float32frombits(le32(bytes[4*i:])); got != float32(2*i) {
			t.Fatalf("float %d of the arena is %v, want %v", i, got, float32(2*i))
		}
		if got := int32(le32(bytes[1024+4*i:])); got != 42 {
			t.Fatalf("int %d of the arena is %d, want 42", i, got)
		}
	}
	// A view of a view, and the whole arena as one type.
	all, err := cuda.View[int32](arena)
	testenv.Must(t, err)
	part, err := all.Slice(256, 258)
	testenv.Must(t, err)
	pair, err := cuda.View[int64](part)
	testenv.Must(t, err)
	if got := read(t, f.s, pair); len(got) != 1 || got[0] != 42<<32|42 {
		t.Errorf("an int64 view of two int32s of 42 reads %v, want [%d]", got, int64(42<<32|42))
	}
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// Views check size, alignment and range before anything else, and say
// which rule was broken.
func TestViewErrors(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, make([]int32, 6))
	odd, err := x.Slice(1, 5)
	testenv.Must(t, err)
	three, err := x.Slice(0, 3)
	testenv.Must(t, err)
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"View of 12 bytes as int64", viewErr[int64](three), cuda.ErrLength},
		{"View as int64 starting at an odd int32", viewErr[int64](odd), cuda.ErrAlign},
		{"ViewAt float32 at byte 2", viewAtErr[float32](x, 2, 1), cuda.ErrAlign},
		{"ViewAt beyond the end", viewAtErr[float32](x, 16, 3), cuda.ErrLength},
		{"ViewAt at a negative offset", viewAtErr[float32](x, -4, 1), cuda.ErrLength},
		{"ViewAt of a negative count", viewAtErr[float32](x, 0, -1), cuda.ErrLength},
		{"ViewAt past the end", viewAtErr[byte](x, 25, 0), cuda.ErrLength},
		{"View of the zero Slice", viewErr[int32](cuda.Slice[float32]{}), cuda.ErrNil},
		{"View as a type with pointers", viewErr[*int](x), cuda.ErrElemType},
		{"View as a type of no size", viewErr[struct{}](x), cuda.ErrElemType},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want an error matching %v", c.name, c.err, c.want)
		}
	}
	// An empty view at the end, and a view of an empty Slice, are allowed.
	if v, err := cuda.ViewAt[byte](x, 24, 0); err != nil || v.Len() != 0 {
		t.Errorf("ViewAt of 0 bytes at the end: %v elements, %v", v.Len(), err)
	}
	empty, err := cuda.Alloc[int32](f.s, 0)
	testenv.Must(t, err)
	if v, err := cuda.View[byte](empty); err != nil || v.Len() != 0 {
		t.Errorf("View of an empty Slice: %v elements, %v", v.Len(), err)
	}
}

func viewErr[U, T any](x cuda.Slice[T]) error {
	_, err := cuda.View[U](x)
	return err
}

func viewAtErr[U, T any](x cuda.Slice[T], off, n int) error {
	_, err := cuda.ViewAt[U](x, off, n)
	return err
}

// A view shares the allocation's lifetime: Free of a view covering it
// frees it (the original's uses then fail with ErrFreed, and so do new
// views), a view of a part cannot free it, and a second Free is ErrFreed.
func TestViewSharesTheLifetime(t *testing.T) {
	f := newFixture(t)
	x, err := cuda.Alloc[float32](f.s, 8)
	testenv.Must(t, err)
	half, err := cuda.ViewAt[int32](x, 0, 4)
	testenv.Must(t, err)
	if err := half.Free(); err == nil {
		t.Error("Free of a view of half the allocation succeeded")
	}
	whole, err := cuda.View[uint64](x)
	testenv.Must(t, err)
	testenv.Must(t, whole.Free())
	if err := cuda.Memset(f.s, x, 1); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("Memset of the original after Free of its view: %v, want ErrFreed", err)
	}
	if err := x.Free(); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("Free of the original after Free of its view: %v, want ErrFreed", err)
	}
	if _, err := cuda.View[int32](x); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("View after Free: %v, want ErrFreed", err)
	}
	if p := half.DevicePtr(); p != 0 {
		t.Errorf("a view's DevicePtr after Free is %#x, want 0", p)
	}
}

// A write through a view on one stream and a read of the original on
// another are ordered as uses of the original are: the read waits for
// the held write.
func TestViewUsesAreOrderedAcrossStreams(t *testing.T) {
	f := newOrderFixture(t)
	v, err := cuda.View[uint32](f.x)
	testenv.Must(t, err)
	gate := testenv.NewGate(t)
	gate.Hold(t, f.s1.Raw())
	testenv.Must(t, cuda.Memset(f.s1, v, 9))
	testenv.Must(t, cuda.CopyToHost(f.s2, f.out, f.x))
	gate.Open()
	sync(t, f.s2)
	if got, want := f.out.Data(), slices.Repeat([]int32{9}, 8); !slices.Equal(got, want) {
		t.Errorf("the read on another stream saw %v, want the view's write %v", got, want)
	}
}
