package cuda

import (
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
)

// The fields a launch reads of each value lie on one cache line: the
// first 64 bytes of a struct whose size is a multiple of 64 bytes (at
// most 768: the allocator's size classes up to there include every such
// multiple, and the objects of such a class start at multiples of their
// size in a page-aligned span). A field added to one of these structs
// takes from its padding; this test says by how much when it does not
// fit.
func TestHotFieldsShareACacheLine(t *testing.T) {
	for _, c := range []struct {
		name       string
		size, want uintptr
		hotEnd     uintptr // the end of the last field a launch reads
	}{
		{"streamState", unsafe.Sizeof(streamState{}), 320, unsafe.Offsetof(streamState{}.ctx) + 8},
		{"alloc", unsafe.Sizeof(allocHandle{}), 192, unsafe.Offsetof(allocHandle{}.own) + unsafe.Offsetof(alloc{}.last) + 8},
		{"moduleState", unsafe.Sizeof(moduleState{}), 128, unsafe.Offsetof(moduleState{}.closed) + 1},
		{"Func", unsafe.Sizeof(Func{}), 192, unsafe.Offsetof(Func{}.quick) + 1},
		{"devState", unsafe.Sizeof(devState{}), 64, unsafe.Offsetof(devState{}.ordinal) + 4},
		{"launchSlot", unsafe.Sizeof(launchSlot{}), 64, unsafe.Sizeof(launchSlot{})},
	} {
		if c.size != c.want {
			t.Errorf("%s is %d bytes, want %d: change its padding by %d bytes", c.name, c.size, c.want, int(c.want)-int(c.size))
		}
		if c.hotEnd > 64 {
			t.Errorf("%s: the fields a launch reads end at byte %d, beyond its first cache line", c.name, c.hotEnd)
		}
	}
	for range 16 {
		for name, p := range map[string]unsafe.Pointer{
			"streamState": unsafe.Pointer(new(streamState)), "allocHandle": unsafe.Pointer(new(allocHandle)),
			"moduleState": unsafe.Pointer(new(moduleState)), "Func": unsafe.Pointer(new(Func)),
			"devState": unsafe.Pointer(new(devState)),
		} {
			if a := uintptr(p) % 64; a != 0 {
				t.Fatalf("a %s allocated at %d bytes past a cache line", name, a)
			}
		}
	}
}

// Launch makes a launch itself once its Func has accepted the shape of
// its arguments (kind and size at each position) through the full check;
// the shapes are kept per position, and a refused launch teaches nothing.
func TestLaunchLearnsTheShapesOfAcceptedArguments(t *testing.T) {
	devs, err := Devices()
	testenv.Must(t, err)
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	defer func() { testenv.MustBounded(t, "ctx.Close", ctx.Close) }()
	s, err := ctx.NewStream()
	testenv.Must(t, err)
	defer func() { testenv.MustBounded(t, "s.Close", s.Close) }()
	mod, err := LoadModule(ctx, kernels.PTX)
	testenv.Must(t, err)
	defer func() { testenv.MustBounded(t, "mod.Close", mod.Close) }()
	saxpy, err := mod.Func("saxpy") // (int n, float a, const float *x, float *y)
	testenv.Must(t, err)
	x, err := Alloc[float32](s, 8)
	testenv.Must(t, err)
	defer func() { testenv.MustBounded(t, "x.Free", x.Free) }()
	y, err := Alloc[float32](s, 8)
	testenv.Must(t, err)
	defer func() { testenv.MustBounded(t, "y.Free", y.Free) }()

	quick := func(args ...Arg) bool {
		var addrs [smallArgs]uint64
		var mems [smallArgs]*alloc
		_, ok := gatherArgs(saxpy, args, &addrs, &mems)
		return ok && int(saxpy.quick) == len(args)+1
	}
	g := Grid(1, 1, 1)
	signed := []Arg{Int32(8), Float32(2), x.Arg(), y.Arg()}
	unsigned := []Arg{Uint32(8), Float32(2), x.Arg(), y.Arg()} // 4 bytes too: accepted by size
	if quick(signed...) {
		t.Fatal("a launch is made quickly before any was checked")
	}
	testenv.Must(t, s.Launch(saxpy, g, g, signed...))
	if !quick(signed...) || !quick(Int32(3), Float32(-1), y.Arg(), x.Arg()) {
		t.Error("after a checked launch, one of the same shape is not made quickly")
	}
	if quick(unsigned...) {
		t.Error("a Uint32 where an Int32 was accepted is made quickly without the full check")
	}
	if err := s.Launch(saxpy, g, g, Int64(8), Float32(2), x.Arg(), y.Arg()); err == nil {
		t.Fatal("an 8-byte int accepted")
	}
	if quick(Int64(8), Float32(2), x.Arg(), y.Arg()) || !quick(signed...) {
		t.Error("a refused launch changed the shapes kept")
	}
	testenv.Must(t, s.Launch(saxpy, g, g, unsigned...))
	if !quick(unsigned...) {
		t.Error("after its checked launch, the unsigned shape is not made quickly")
	}
	if quick(Float32(2), Float32(2), x.Arg(), y.Arg()) || quick(Int32(8), Float32(2), x.Arg()) || quick(Int32(8), Float32(2), x.Arg(), Ptr(0)) {
		t.Error("an argument of another kind, or another count, is made quickly")
	}
	testenv.MustBounded(t, "s.Sync", func() error { return s.Sync(testenv.Context(t)) })
}

// A history entry whose fields are not those of one launch (a reader
// meeting a write in progress, or two launches writing one entry at once)
// is left out of the candidates.
func TestLaunchHistoryLeavesOutTornEntries(t *testing.T) {
	dv := &devState{ring: make([]launchSlot, 4)}
	f, g := &Func{name: "f"}, &Func{name: "g"}
	a, b := &streamState{raw: 10}, &streamState{raw: 20}
	d := [6]uint32{1, 1, 1, 1, 1, 1}
	dv.record(f, a, &d, 1)
	dv.record(f, a, &d, 2)
	if got := dv.candidates(nil); len(got) != 2 {
		t.Fatalf("%d candidates, want 2", len(got))
	}
	for name, tear := range map[string]func(s *launchSlot){
		"another Func":   func(s *launchSlot) { s.fn = g.weakRef() },
		"another stream": func(s *launchSlot) { s.st = b.weakRef() },
		"another grid":   func(s *launchSlot) { s.grid[2] = 7 },
		"another caller": func(s *launchSlot) { s.callPC = 9 },
		"another number": func(s *launchSlot) { s.seq = 6 },
	} {
		s := &dv.ring[2]
		saved := *s
		tear(s)
		got := dv.candidates(nil)
		if len(got) != 1 || got[0].Number != 1 {
			t.Errorf("%s in the entry of launch 2: candidates %v, want launch 1 alone", name, got)
		}
		*s = saved
	}
}

// Alloc's one allocation is the handle with the allocation inside, at
// its start (TestHotFieldsShareACacheLine checks its size and alignment).
func TestAllocHandleHoldsItsAllocationFirst(t *testing.T) {
	if off := unsafe.Offsetof(allocHandle{}.own); off != 0 {
		t.Errorf("allocHandle.own at byte %d, want 0", off)
	}
}
