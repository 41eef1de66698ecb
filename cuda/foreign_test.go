package cuda_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// memAlloc allocates bytes with libcuda.MemAlloc, memory package cuda does
// not know, and returns it with a release that frees it once.
func memAlloc(t testing.TB, ctx *cuda.Context, bytes uint64) (libcuda.Deviceptr, func() error, <-chan error) {
	t.Helper()
	var p libcuda.Deviceptr
	testenv.Must(t, ctx.Do(func() error { return libcuda.MemAlloc(&p, bytes) }))
	released := make(chan error, 2)
	release := func() error {
		err := ctx.Do(func() error { return libcuda.MemFree(p) })
		released <- err
		return err
	}
	return p, release, released
}

// A pointer from libcuda.MemAlloc wrapped by Foreign is a Slice like
// Alloc's: copies, memsets and launches use it, a use on another stream
// waits for the write on the first, and its Free calls the release
// function once, after that work.
func TestForeignPointerIsAnOrderedSlice(t *testing.T) {
	f := newOrderFixture(t)
	p, release, released := memAlloc(t, f.ctx, 1024)
	x, err := cuda.Foreign[int32](f.ctx, p, 8, release)
	testenv.Must(t, err)
	if x.DevicePtr() != p || x.Len() != 8 || x.Device() != f.ctx.Device() {
		t.Errorf("Foreign Slice at %#x of %d elements on %v, want %#x, 8, %v", x.DevicePtr(), x.Len(), x.Device(), p, f.ctx.Device())
	}
	gate := testenv.NewGate(t)
	gate.Hold(t, f.s1.Raw())
	testenv.Must(t, cuda.Memset(f.s1, x, 41))
	testenv.Must(t, f.s2.Launch(f.fn(t, "add_one_i32"), cuda.Grid(1, 1, 1), cuda.Block(8, 1, 1), x.Arg(), cuda.Uint64(8)))
	testenv.Must(t, cuda.CopyToHost(f.s2, f.out, x))
	testenv.Must(t, x.Free())
	testenv.StillWaiting(t, "the release of a Foreign Slice whose work is held", released)
	gate.Open()
	testenv.Finished(t, "the release", released)
	sync(t, f.s2)
	if got, want := f.out.Data(), slices.Repeat([]int32{42}, 8); !slices.Equal(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
	if err := cuda.Memset(f.s1, x, 0); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("Memset after Free: %v, want ErrFreed", err)
	}
	if err := x.Free(); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("a second Free: %v, want ErrFreed", err)
	}
	select {
	case err := <-released:
		t.Errorf("release called a second time (%v)", err)
	default:
	}
}

// A Foreign Slice with no release leaves the memory to its owner, and can
// be viewed and carved as an arena.
func TestForeignWithoutReleaseAndViewed(t *testing.T) {
	f := newFixture(t)
	p, release, _ := memAlloc(t, f.ctx, 512)
	defer func() { testenv.Must(t, release()) }()
	x, err := cuda.Foreign[byte](f.ctx, p, 512, nil)
	testenv.Must(t, err)
	v, err := cuda.ViewAt[int32](x, 256, 4)
	testenv.Must(t, err)
	testenv.Must(t, cuda.CopyToDevice(f.s, v, []int32{1, 2, 3, 4}))
	if got := read(t, f.s, v); !slices.Equal(got, []int32{1, 2, 3, 4}) {
		t.Errorf("read %v through a view of a Foreign Slice, want [1 2 3 4]", got)
	}
	testenv.Must(t, x.Free())
	sync(t, f.s)
}

// Foreign refuses what it cannot check: a nil context or address, no
// elements, a misaligned address, a range beyond the allocation, an
// address the driver does not know.
func TestForeignErrors(t *testing.T) {
	f := newFixture(t)
	p, release, _ := memAlloc(t, f.ctx, 1024)
	defer func() { testenv.Must(t, release()) }()
	var host [64]byte
	unknown := libcuda.Deviceptr(uintptr(ptr(&host[0])))
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"nil context", foreignErr[int32](nil, p, 4), cuda.ErrNil},
		{"address 0", foreignErr[int32](f.ctx, 0, 4), cuda.ErrNil},
		{"no elements", foreignErr[int32](f.ctx, p, 0), cuda.ErrLength},
		{"misaligned", foreignErr[int32](f.ctx, p+2, 4), cuda.ErrAlign},
		{"beyond the allocation", foreignErr[int32](f.ctx, p+1020, 1<<20), cuda.ErrLength},
		{"an address the driver does not know", foreignErr[int32](f.ctx, unknown&^7, 4), cuda.ErrInvalidValue},
		{"a type with pointers", foreignErr[*int](f.ctx, p, 4), cuda.ErrElemType},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want an error matching %v", c.name, c.err, c.want)
		}
	}
}

func foreignErr[T any](ctx *cuda.Context, p libcuda.Deviceptr, n int) error {
	_, err := cuda.Foreign[T](ctx, p, n, nil)
	return err
}
