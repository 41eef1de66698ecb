package cuda_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// Launches that Launch makes itself (a Func's later launches of a shape
// its first one had checked) are ordered across streams as the others
// are: a Slice a launch wrote on s1, held, is read on s2 after the write;
// a launch on s2 writing a Slice s1 wrote, held, writes after it.
func TestQuickLaunchIsOrderedAcrossStreams(t *testing.T) {
	for _, how := range []string{"launch on s1, read on s2", "write on s1, launch on s2"} {
		t.Run(how, func(t *testing.T) {
			f := newOrderFixture(t)
			add := f.fn(t, "add_one_i32")
			g, b := cuda.Grid(1, 1, 1), cuda.Block(8, 1, 1)
			// The Func's first launch of the shape is checked in full; the
			// launches below are Launch's own.
			warm := alloc(t, f.s1, make([]int32, 8))
			testenv.Must(t, f.s1.Launch(add, g, b, warm.Arg(), cuda.Uint64(8)))
			sync(t, f.s1)
			gate := testenv.NewGate(t)
			gate.Hold(t, f.s1.Raw())
			var want []int32
			switch how {
			case "launch on s1, read on s2":
				testenv.Must(t, f.s1.Launch(add, g, b, f.x.Arg(), cuda.Uint64(8))) // x is s1's alone
				testenv.Must(t, cuda.CopyToHost(f.s2, f.out, f.x))
				for _, v := range seq8 {
					want = append(want, v+1)
				}
			case "write on s1, launch on s2":
				testenv.Must(t, cuda.Memset(f.s1, f.x, 5))
				testenv.Must(t, f.s2.Launch(add, g, b, f.x.Arg(), cuda.Uint64(8)))
				testenv.Must(t, cuda.CopyToHost(f.s2, f.out, f.x))
				want = []int32{6, 6, 6, 6, 6, 6, 6, 6}
			}
			waitsForTheGate(t, f.s2, gate, "s2's work", "s1's")
			if got := f.out.Data(); !slices.Equal(got, want) {
				t.Errorf("s2 read %v, want %v", got, want)
			}
		})
	}
}

// Do orders like a launch: a Slice that a Do wrote on s1 (its own until
// then), held, is read on s2 after the write.
func TestDoOnAStreamsOwnSliceIsOrderedBeforeAnotherStream(t *testing.T) {
	f := newOrderFixture(t)
	gate := testenv.NewGate(t)
	gate.Hold(t, f.s1.Raw())
	ops := [1]cuda.Operand{f.x.Operand(cuda.Write)}
	testenv.Must(t, f.s1.Do("cuMemsetD32Async", ops[:], func(raw libcuda.Stream) error {
		return libcuda.MemsetD32Async(ops[0].Ptr(), 9, 8, raw)
	}))
	testenv.Must(t, cuda.CopyToHost(f.s2, f.out, f.x))
	waitsForTheGate(t, f.s2, gate, "s2's read", "s1's Do")
	if got, want := f.out.Data(), []int32{9, 9, 9, 9, 9, 9, 9, 9}; !slices.Equal(got, want) {
		t.Errorf("s2 read %v, want %v", got, want)
	}
}

// Each operand of Do holds its allocation, one allocation as often as it
// is passed; all the holds end with the call, also when f panics, and the
// thread then has its own context again: Free and Close do not wait after
// the calls.
func TestDoEndsItsHoldsAlsoWhenItsFunctionPanics(t *testing.T) {
	testenv.OnThread(t, 0)
	f := newFixture(t)
	other := otherContext(t, f)
	testenv.Must(t, libcuda.CtxSetCurrent(other))
	t.Cleanup(func() { testenv.Must(t, libcuda.CtxSetCurrent(0)) }) // before other is destroyed
	s := newStream(t, f.ctx)
	x := alloc(t, s, []float32{1, 2, 3, 4})
	y := alloc(t, s, []float32{1, 2, 3, 4})
	part, err := x.Slice(1, 3)
	testenv.Must(t, err)
	ops := [4]cuda.Operand{x.Operand(cuda.Read), part.Operand(cuda.Write), y.Operand(cuda.Read), x.Operand(cuda.ReadWrite)}
	testenv.Must(t, s.Do("twice", ops[:], func(libcuda.Stream) error { return nil }))
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want f's panic", r)
			}
		}()
		_ = s.Do("panics", ops[:], func(libcuda.Stream) error { panic("boom") })
	}()
	var cur libcuda.Context
	testenv.Must(t, libcuda.CtxGetCurrent(&cur))
	if cur != other {
		t.Errorf("after the panic the thread has context %v, want its own %v", cur, other)
	}
	for i := range ops {
		if p := ops[i].Ptr(); p != 0 {
			t.Errorf("operand %d: address %v after the panic", i, p)
		}
	}
	freed := testenv.WaitAsync(func() error { return errors.Join(x.Free(), y.Free()) })
	testenv.Finished(t, "Free after the calls", freed)
	closed := testenv.WaitAsync(s.Close)
	testenv.Finished(t, "Close after the calls", closed)
}
