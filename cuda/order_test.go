package cuda_test

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// orderFixture: the first device's context, three non-blocking streams and
// a Slice of 8 int32 holding 0..7, written and synchronized on the first.
type orderFixture struct {
	*fixture
	s1, s2, s3 *cuda.Stream
	x          cuda.Slice[int32]
	out        *cuda.Pinned[int32]
}

var seq8 = []int32{0, 1, 2, 3, 4, 5, 6, 7}

// waitsForTheGate checks that the work submitted to s so far waits for
// the work that gate holds: s's Sync does not return while gate is held
// (testenv.StillWaiting), and returns once it opens. work names s's work,
// held what gate holds, for the failure.
func waitsForTheGate(t *testing.T, s *cuda.Stream, gate *testenv.Gate, work, held string) {
	t.Helper()
	done := testenv.WaitAsync(func() error { return s.Sync(testenv.Context(t)) })
	testenv.StillWaiting(t, work+" while "+held+" is held", done)
	gate.Open()
	testenv.Finished(t, work, done)
}

func newOrderFixture(t *testing.T, opts ...cuda.StreamOption) *orderFixture {
	t.Helper()
	testenv.OnPrimary(t, 0)
	f := &orderFixture{fixture: newFixture(t)}
	f.s1 = newStream(t, f.ctx, cuda.NonBlocking())
	f.s2 = newStream(t, f.ctx, append([]cuda.StreamOption{cuda.NonBlocking()}, opts...)...)
	f.s3 = newStream(t, f.ctx, cuda.NonBlocking())
	f.x = alloc(t, f.s1, seq8)
	sync(t, f.s1)
	out, err := cuda.AllocPinned[int32](f.ctx, 8)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "out.Free", out.Free) })
	f.out = out
	// Releases of earlier tests' host memory end now: an unregister is a
	// device-wide fence, which would wait for the streams these tests hold
	// and hold the other streams' work meanwhile.
	testenv.Must(t, hostmem.Drain(testenv.Context(t)))
	return f
}

// A read on s2 of what s1 writes sees the write: s2 waits for s1, without
// the program saying so. Without the tracking s2 reads before s1's held
// write and sees the old data.
func TestReadOnAnotherStreamSeesTheWrite(t *testing.T) {
	for _, how := range []string{"copy", "launch", "Do"} {
		t.Run(how, func(t *testing.T) {
			f := newOrderFixture(t)
			gate := testenv.NewGate(t)
			gate.Hold(t, f.s1.Raw())
			want := []int32{10, 11, 12, 13, 14, 15, 16, 17}
			src, err := cuda.AllocPinned[int32](f.ctx, 8)
			testenv.Must(t, err)
			t.Cleanup(func() { testenv.MustBounded(t, "src.Free", src.Free) })
			copy(src.Data(), want)
			testenv.Must(t, cuda.CopyToDevice(f.s1, f.x, src)) // a write on s1, held
			switch how {
			case "copy":
				testenv.Must(t, cuda.CopyToHost(f.s2, f.out, f.x))
			case "launch": // add_one writes; it reads first
				testenv.Must(t, f.s2.Launch(f.fn(t, "add_one_i32"), cuda.Grid(1, 1, 1), cuda.Block(8, 1, 1), f.x.Arg(), cuda.Uint64(8)))
				testenv.Must(t, cuda.CopyToHost(f.s2, f.out, f.x))
				for i := range want {
					want[i]++
				}
			case "Do": // a library call reading x on s2 (a copy through libcuda)
				ops := [1]cuda.Operand{f.x.Operand(cuda.Read)}
				testenv.Must(t, f.s2.Do("cuMemcpyDtoHAsync", ops[:], func(raw libcuda.Stream) error {
					return libcuda.MemcpyDtoHAsync(f.out.Buffer().Pointer(), ops[0].Ptr(), 32, raw)
				}))
				testenv.Must(t, f.out.Buffer().Use(f.s2.Raw()))
			}
			// s2 waits for s1's held write (without the tracking it runs).
			waitsForTheGate(t, f.s2, gate, "s2's work", "s1's write")
			if got := f.out.Data(); !slices.Equal(got, want) {
				t.Errorf("s2 read %v, want %v (what s1 wrote)", got, want)
			}
		})
	}
}

// A write on s2 waits for a read on s1 still held: the read sees the old
// data. Without the tracking the write lands first.
func TestWriteOnAnotherStreamWaitsForTheRead(t *testing.T) {
	f := newOrderFixture(t)
	gate := testenv.NewGate(t)
	gate.Hold(t, f.s1.Raw())
	testenv.Must(t, cuda.CopyToHost(f.s1, f.out, f.x)) // a read on s1, held
	testenv.Must(t, cuda.Memset(f.s2, f.x, -1))        // a write on s2
	waitsForTheGate(t, f.s2, gate, "s2's write", "s1's read")
	sync(t, f.s1)
	sync(t, f.s2)
	if got := f.out.Data(); !slices.Equal(got, seq8) {
		t.Errorf("s1's read saw %v, want the data before s2's write %v", got, seq8)
	}
	if got := read(t, f.s2, f.x); !slices.Equal(got, []int32{-1, -1, -1, -1, -1, -1, -1, -1}) {
		t.Errorf("after the write: %v", got)
	}
}

// Two readers on two streams are not serialized: a read on s2 finishes
// while a read on s1 is held, for copies and for launches whose argument
// is marked ReadOnly (sum_i64 reads its input).
func TestReadersOnTwoStreamsAreNotSerialized(t *testing.T) {
	for _, how := range []string{"copy", "ReadOnly launch"} {
		t.Run(how, func(t *testing.T) {
			f := newOrderFixture(t)
			// The last writes on s3, which both readers wait for.
			in := alloc(t, f.s3, []int64{1, 2, 3, 4})
			testenv.Must(t, cuda.Memset(f.s3, f.x, 5))
			sum := alloc(t, f.s1, []int64{0})
			sum2 := alloc(t, f.s2, []int64{0})
			sync(t, f.s1)
			sync(t, f.s2)
			sumK := f.fn(t, "sum_i64")
			// The kernel's first launch before the gate. On the H200, with
			// sum_i64 never run before, the launch on s2 did not finish
			// while s1 was held (the driver loads kernels lazily, at their
			// first use; the likely cause): this test is about the ordering.
			testenv.Must(t, f.s1.Launch(sumK, cuda.Grid(1, 1, 1), cuda.Block(1, 1, 1), in.Arg().ReadOnly(), cuda.Uint64(4), sum.Arg(), cuda.Uint64(0)))
			sync(t, f.s1)
			gate := testenv.NewGate(t)
			gate.Hold(t, f.s1.Raw())
			switch how {
			case "copy":
				testenv.Must(t, cuda.CopyToHost(f.s1, f.out, f.x))
			default:
				testenv.Must(t, f.s1.Launch(sumK, cuda.Grid(1, 1, 1), cuda.Block(1, 1, 1), in.Arg().ReadOnly(), cuda.Uint64(4), sum.Arg(), cuda.Uint64(0)))
			}
			done := testenv.WaitAsync(func() error {
				var err error
				if how == "copy" {
					err = cuda.CopyToHost(f.s2, make([]int32, 8), f.x) // pageable: returns when read
				} else {
					err = f.s2.Launch(sumK, cuda.Grid(1, 1, 1), cuda.Block(1, 1, 1), in.Arg().ReadOnly(), cuda.Uint64(4), sum2.Arg(), cuda.Uint64(0))
					if err == nil {
						got := make([]int64, 1)
						err = cuda.CopyToHost(f.s2, got, sum2)
						if err == nil && got[0] != 10 {
							err = fmt.Errorf("sum on s2 = %d, want 10", got[0])
						}
					}
				}
				return err
			})
			testenv.Finished(t, "a read on s2 while a read on s1 is held", done)
			gate.Open()
		})
	}
}

// A Slice allocated on s1 and first used on s2 is ordered after its
// allocation and its first write there.
func TestUseOnAnotherStreamWaitsForTheAlloc(t *testing.T) {
	f := newOrderFixture(t)
	gate := testenv.NewGate(t)
	gate.Hold(t, f.s1.Raw())
	y, err := cuda.Alloc[int32](f.s1, 8)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "y.Free", y.Free) })
	testenv.Must(t, cuda.Memset(f.s1, y, 7))
	testenv.Must(t, cuda.CopyToHost(f.s2, f.out, y))
	waitsForTheGate(t, f.s2, gate, "s2's read", "s1's allocation and memset")
	sync(t, f.s2)
	if got := f.out.Data(); !slices.Equal(got, []int32{7, 7, 7, 7, 7, 7, 7, 7}) {
		t.Errorf("s2 read %v before s1's memset", got)
	}
}

// Inside a capture the tracking adds no wait: a Slice last written on
// another stream is used in the capture, and the capture does not fail
// with CUDA_ERROR_STREAM_CAPTURE_ISOLATION.
func TestCaptureAddsNoWaitsAcrossItsBoundary(t *testing.T) {
	f := newOrderFixture(t)
	testenv.Must(t, cuda.Memset(f.s1, f.x, 3)) // last write on s1
	sync(t, f.s1)
	g, err := f.s2.Capture(func(s *cuda.Stream) error {
		return s.Launch(f.fn(t, "add_one_i32"), cuda.Grid(1, 1, 1), cuda.Block(8, 1, 1), f.x.Arg(), cuda.Uint64(8))
	})
	if errors.Is(err, cuda.ErrCaptureIsolation) {
		t.Fatalf("the capture failed for a wait the tracking added: %v", err)
	}
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "g.Destroy", g.Destroy)
	e, err := g.Instantiate()
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "e.Destroy", e.Destroy)
	testenv.Must(t, f.s2.LaunchGraph(e))
	if got := read(t, f.s2, f.x); !slices.Equal(got, []int32{4, 4, 4, 4, 4, 4, 4, 4}) {
		t.Errorf("after the graph: %v", got)
	}
}

// Launches and copies on one stream allocate nothing with the tracking on.
func TestOneStreamOrderingAllocatesNothing(t *testing.T) {
	f := newOrderFixture(t)
	addOne := f.fn(t, "add_one_i32")
	var err error
	keep := func(e error) {
		if e != nil {
			err = e
		}
	}
	n := testing.AllocsPerRun(200, func() {
		keep(f.s1.Launch(addOne, cuda.Grid(1, 1, 1), cuda.Block(8, 1, 1), f.x.Arg(), cuda.Uint64(8)))
		keep(cuda.CopyToHost(f.s1, f.out, f.x))
		keep(cuda.Memset(f.s1, f.x, 1))
	})
	testenv.Must(t, err)
	if n != 0 {
		t.Errorf("a launch, a copy and a memset on one stream allocate %v times, want 0", n)
	}
	sync(t, f.s1)
}

// Writes of disjoint parts of one allocation on two streams do not wait
// for each other (the chunked pattern keeps its overlap); a write of an
// overlapping part does.
func TestWritesOfDisjointPartsAreNotSerialized(t *testing.T) {
	f := newOrderFixture(t)
	// Each stream's first use waits for the allocation's stream (idle).
	lo, err := f.x.Slice(0, 4)
	testenv.Must(t, err)
	hi, err := f.x.Slice(4, 8)
	testenv.Must(t, err)
	mid, err := f.x.Slice(2, 6)
	testenv.Must(t, err)
	testenv.Must(t, cuda.Zero(f.s2, hi))
	sync(t, f.s2)
	gate := testenv.NewGate(t)
	gate.Hold(t, f.s1.Raw())
	testenv.Must(t, cuda.Memset(f.s1, lo, 1)) // held
	testenv.Must(t, cuda.Memset(f.s2, hi, 2))
	done := testenv.WaitAsync(func() error { return f.s2.Sync(testenv.Context(t)) })
	testenv.Finished(t, "a write of [4:8) on s2 while a write of [0:4) on s1 is held", done)
	testenv.Must(t, cuda.Memset(f.s3, mid, 3)) // overlaps both
	waitsForTheGate(t, f.s3, gate, "a write of [2:6) on s3", "s1's write of [0:4)")
	if got := read(t, f.s3, f.x); !slices.Equal(got, []int32{1, 1, 3, 3, 3, 3, 2, 2}) {
		t.Errorf("after the three writes: %v", got)
	}
}

// Two streams each ordering a write after the other's work, with a Close
// of each waiting meanwhile, all finish: a Close waiting for its stream's
// lock blocks that lock's new readers, so a stream's work must not wait
// for the other stream's lock while it holds its own (before, the two
// writes and the two Closes waited for each other for ever). The hook
// holds each write where it is about to mark the other stream's work
// until both Closes wait. The streams and Slices are the test's own, not
// closed and freed by cleanups: after a deadlock those would wait too.
func TestCrossWaitsWithTwoClosesDoNotDeadlock(t *testing.T) {
	f := newOrderFixture(t)
	sA, err := f.ctx.NewStream(cuda.NonBlocking())
	testenv.Must(t, err)
	sB, err := f.ctx.NewStream(cuda.NonBlocking())
	testenv.Must(t, err)
	a, err := cuda.Alloc[int32](sA, 8)
	testenv.Must(t, err)
	b, err := cuda.Alloc[int32](sB, 8)
	testenv.Must(t, err)
	testenv.Must(t, cuda.Memset(sA, a, 0)) // last written on sA
	testenv.Must(t, cuda.Memset(sB, b, 0)) // last written on sB
	arrived, release := make(chan struct{}, 2), make(chan struct{})
	var marks atomic.Int32
	restore := cuda.SetOrderMarkHook(func() {
		if marks.Add(1) <= 2 {
			arrived <- struct{}{}
			<-release
		}
	})
	defer restore()
	wA := testenv.WaitAsync(func() error { return cuda.Memset(sA, b, 1) }) // waits for sB's write of b
	wB := testenv.WaitAsync(func() error { return cuda.Memset(sB, a, 2) }) // waits for sA's write of a
	testenv.Recv(t, arrived, "the first write to mark the other stream's work")
	testenv.Recv(t, arrived, "the second write to mark the other stream's work")
	cA := testenv.WaitAsync(sA.Close)
	cB := testenv.WaitAsync(sB.Close)
	testenv.Eventually(t, "both Closes to wait for their streams", func() bool {
		return cuda.StreamLockedForClose(sA) && cuda.StreamLockedForClose(sB)
	})
	close(release)
	for _, w := range []struct {
		what string
		ch   <-chan error
	}{{"the write on sA", wA}, {"the write on sB", wB}, {"sA's Close", cA}, {"sB's Close", cB}} {
		select {
		case err := <-w.ch:
			if err != nil {
				t.Errorf("%s: %v", w.what, err)
			}
		case <-time.After(testenv.Timeout):
			deadlocked = append(deadlocked, sA, sB, a, b) // out of their cleanups' reach
			t.Fatalf("%s did not return within %v: the writes and the Closes wait for each other", w.what, testenv.Timeout)
		}
	}
	if got := read(t, f.s3, a); !slices.Equal(got, []int32{2, 2, 2, 2, 2, 2, 2, 2}) {
		t.Errorf("a after the write on sB: %v", got)
	}
	if got := read(t, f.s3, b); !slices.Equal(got, []int32{1, 1, 1, 1, 1, 1, 1, 1}) {
		t.Errorf("b after the write on sA: %v", got)
	}
	testenv.MustBounded(t, "a.Free", a.Free)
	testenv.MustBounded(t, "b.Free", b.Free)
}

// deadlocked keeps what a deadlocked test leaves behind reachable, so that
// no cleanup waits for it for ever.
var deadlocked []any
