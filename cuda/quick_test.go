package cuda_test

import (
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
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
			done := testenv.WaitAsync(func() error { return f.s2.Sync(testenv.Context(t)) })
			testenv.StillWaiting(t, "s2's work while s1's is held", done)
			gate.Open()
			testenv.Finished(t, "s2's work", done)
			if got := f.out.Data(); !slices.Equal(got, want) {
				t.Errorf("s2 read %v, want %v", got, want)
			}
		})
	}
}
