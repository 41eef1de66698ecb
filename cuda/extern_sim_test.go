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

// Work that a library submits through Stream.Do (here a memset) is
// recorded on its operands: Free waits for the stream that ran it.
func TestDoRecordsTheStreamOnItsOperands(t *testing.T) {
	testenv.OnPrimary(t, 0)
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	gate := testenv.NewGate(t)
	home := newStream(t, f.ctx, cuda.NonBlocking())
	user := newStream(t, f.ctx, cuda.NonBlocking())
	testenv.MustBounded(t, "f.ctx.Sync", func() error { return f.ctx.Sync(testenv.Context(t)) })
	base := testenv.SimStat(t, "live_allocations")
	x, err := cuda.Alloc[uint32](home, 1024)
	testenv.Must(t, err)
	sync(t, home)
	gate.Hold(t, user.Raw())
	ops := [1]cuda.Operand{x.Operand(cuda.Write)}
	testenv.Must(t, user.Do("cuMemsetD32Async", ops[:], func(raw libcuda.Stream) error {
		return libcuda.MemsetD32Async(ops[0].Ptr(), 7, 1024, raw)
	}))
	testenv.MustBounded(t, "x.Free", x.Free)
	// Unrecorded, the free would go on home, idle, at once.
	liveAllocationsStay(t, base+1, "the user is held")
	gate.Open()
	testenv.Eventually(t, "the free", func() bool { return testenv.SimStat(t, "live_allocations") == base })
}

// During f the operands' addresses are the Slices' and the stream's
// context is current; after it the addresses read 0.
func TestDoGivesAddressesAndTheContextDuringTheCallOnly(t *testing.T) {
	testenv.OnThread(t, 0)
	f := newFixture(t)
	x := alloc(t, f.s, []float32{1, 2, 3, 4})
	part, err := x.Slice(1, 3)
	testenv.Must(t, err)
	ops := [3]cuda.Operand{x.Operand(cuda.Read), part.Operand(cuda.Write), x.Operand(cuda.ReadWrite)}
	var got [3]libcuda.Deviceptr
	var cur libcuda.Context
	calls := 0
	testenv.Must(t, f.s.Do("test", ops[:], func(raw libcuda.Stream) error {
		calls++
		if raw != f.s.Raw() {
			t.Errorf("raw %v, want the stream's %v", raw, f.s.Raw())
		}
		for i := range ops {
			got[i] = ops[i].Ptr()
		}
		return libcuda.CtxGetCurrent(&cur)
	}))
	if calls != 1 {
		t.Fatalf("f ran %d times", calls)
	}
	want := [3]libcuda.Deviceptr{x.DevicePtr(), part.DevicePtr(), x.DevicePtr()}
	if got != want || want[1] != want[0]+4 {
		t.Errorf("addresses %v, want %v", got, want)
	}
	if cur != f.ctx.Raw() {
		t.Errorf("context %v current during the call, want %v", cur, f.ctx.Raw())
	}
	for i := range ops {
		if p := ops[i].Ptr(); p != 0 {
			t.Errorf("operand %d: address %v after the call", i, p)
		}
	}
}

// Bad operands fail the call before f runs, naming the call and the
// operand; a failing f is returned as it is.
func TestDoRefusesBadOperands(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, []float32{1, 2})
	freed, err := cuda.Alloc[float32](f.s, 2)
	testenv.Must(t, err)
	testenv.MustBounded(t, "freed.Free", freed.Free)
	for _, c := range []struct {
		name string
		ops  []cuda.Operand
		want error
	}{
		{"zero Slice", []cuda.Operand{x.Operand(cuda.Read), (cuda.Slice[float32]{}).Operand(cuda.Read)}, cuda.ErrNil},
		{"zero Operand", []cuda.Operand{{}}, cuda.ErrNil},
		{"freed", []cuda.Operand{x.Operand(cuda.Read), freed.Operand(cuda.Write)}, cuda.ErrFreed},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := f.s.Do("libX", c.ops, func(libcuda.Stream) error {
				t.Error("f ran")
				return nil
			})
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), "libX: operand") {
				t.Errorf("got %v, want %v naming libX and the operand", err, c.want)
			}
		})
	}
	if err := f.s.Do("libX", []cuda.Operand{x.Operand(0)}, func(libcuda.Stream) error { return nil }); err == nil {
		t.Error("an access of 0 was taken")
	}
	boom := errors.New("boom")
	if err := f.s.Do("libX", nil, func(libcuda.Stream) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("got %v, want f's error", err)
	}
	if err := f.s.Do("libX", nil, nil); err == nil {
		t.Error("a nil f was taken")
	}
	// After the failures x is still held by nobody: Free works.
	testenv.MustBounded(t, "x.Free", x.Free)
	if err := testenv.BoundedErr(t, "f.s.Do", func() error {
		return f.s.Do("libX", []cuda.Operand{x.Operand(cuda.Read)}, func(libcuda.Stream) error { return nil })
	}); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("use after Free: %v", err)
	}
}

// A closed stream refuses Do; a ContextHold keeps the context usable after
// the Stream and the Context are closed, until Release.
func TestContextHoldOutlivesStreamAndContext(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	s, err := ctx.NewStream()
	testenv.Must(t, err)
	h, err := s.HoldContext()
	testenv.Must(t, err)
	testenv.MustBounded(t, "s.Close", s.Close)
	if err := testenv.BoundedErr(t, "s.Do", func() error { return s.Do("libX", nil, func(libcuda.Stream) error { return nil }) }); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Do on a closed stream: %v", err)
	}
	if _, err := s.HoldContext(); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("HoldContext on a closed stream: %v", err)
	}
	testenv.MustBounded(t, "ctx.Close", ctx.Close)
	var cur libcuda.Context
	testenv.Must(t, h.Do(func() error { return libcuda.CtxGetCurrent(&cur) }))
	if cur != ctx.Raw() {
		t.Errorf("context %v current in Do, want %v", cur, ctx.Raw())
	}
	testenv.Must(t, h.Release())
	if err := testenv.BoundedErr(t, "h.Release", func() error { return h.Release() }); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("second Release: %v", err)
	}
	if err := testenv.BoundedErr(t, "h.Do", func() error { return h.Do(func() error { return nil }) }); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Do after Release: %v", err)
	}
}

// Stream.Do with operands on the stack allocates nothing.
func TestDoAllocatesNothing(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, make([]uint32, 64))
	n := testing.AllocsPerRun(100, func() {
		ops := [2]cuda.Operand{x.Operand(cuda.Read), x.Operand(cuda.Write)}
		if err := f.s.Do("cuMemsetD32Async", ops[:], func(raw libcuda.Stream) error {
			return libcuda.MemsetD32Async(ops[1].Ptr(), 1, 64, raw)
		}); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("%v allocations a call", n)
	}
}

// Library calls through Stream.Do that write disjoint parts of one
// allocation on four streams (each its own chunk, as a batched library
// call per stream would) are not serialized: once each stream has waited
// for the allocation, repetitions record no event (the simulator's
// counter). An operand that counted from its first byte to the end of the
// allocation would order every stream after the ones writing the chunks
// above its own. The writes land where they should.
func TestDoOnDisjointPartsOfAnAllocationIsNotSerialized(t *testing.T) {
	f := newFixture(t)
	const nstreams, chunk = 4, 256
	var st [nstreams]*cuda.Stream
	for i := range st {
		st[i] = newStream(t, f.ctx, cuda.NonBlocking())
	}
	x, err := cuda.Alloc[uint32](st[0], nstreams*chunk)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "x.Free", x.Free) })
	sync(t, st[0])
	rep := func(v uint32) {
		for i, s := range st {
			part, err := x.Slice(i*chunk, (i+1)*chunk)
			testenv.Must(t, err)
			ops := [1]cuda.Operand{part.Operand(cuda.Write)}
			testenv.Must(t, s.Do("cuMemsetD32Async", ops[:], func(raw libcuda.Stream) error {
				return libcuda.MemsetD32Async(ops[0].Ptr(), v+uint32(i), chunk, raw)
			}))
		}
	}
	rep(10) // each stream's first use waits for st[0]'s allocation
	records := testenv.SimStat(t, "event_records")
	for r := range 3 {
		rep(uint32(20 + 10*r))
	}
	got := testenv.SimStat(t, "event_records") - records
	for _, s := range st {
		sync(t, s)
	}
	if got != 0 {
		t.Errorf("3 repetitions of disjoint writes recorded %d events, want 0: the streams wait for each other", got)
	}
	data := read(t, st[0], x)
	for i := range nstreams {
		if v := data[i*chunk]; v != uint32(40+i) || data[(i+1)*chunk-1] != uint32(40+i) {
			t.Errorf("chunk %d reads %d .. %d, want %d", i, v, data[(i+1)*chunk-1], 40+i)
		}
	}
}
