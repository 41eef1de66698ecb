//go:build !gpu

package cublas_test

import (
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
)

// This test is the stand-in's only. It holds the handle's stream with a
// gate (a stream wait on host memory) and, while it is held, reads the
// call's inputs on fresh streams, expecting those reads not to wait, and
// creates streams and starts pageable copies. On a GPU (H100, driver 580)
// neither is safe: a pageable copy of an input on another non-blocking
// stream waited behind the held stream (a false dependency CUDA permits:
// the driver's staging, or streams sharing a hardware queue), and a
// stream creation blocked in the driver behind a pageable copy that
// waited on the gate, which the test opens only afterwards, so the run
// hung. "A read of what the call only reads does not wait" cannot be
// observed there; the ordering that matters, a read of what a call writes
// waits for the call, is checked on the GPU by
// TestAReadOfCOnAnotherStreamSeesTheGemm, which makes no driver call
// between the hold and the open but the Gemm and that one read.

// operand is a Slice of a call, with a read of it on another stream.
type operand struct {
	name string
	read func(s *cuda.Stream) error // a pageable copy to the host: it returns when the read is done
}

func op[T any](name string, x cuda.Slice[T]) operand {
	return operand{name, func(s *cuda.Stream) error { return cuda.CopyToHost(s, make([]T, x.Len()), x) }}
}

// checkUses checks the uses a call records on its handle's stream, held
// by a gate: a read of what it only reads, on another stream, does not
// wait for it; a read of what it writes does, until the call's work runs.
// The operands were last written on another stream than the handle's, so
// that the ordering comes from the call's record and from nothing else.
func checkUses(t *testing.T, f *fixture, call func() error, reads, writes []operand) {
	t.Helper()
	gate := testenv.NewGate(t)
	gate.Hold(t, f.s.Raw())
	testenv.Must(t, call())
	for _, r := range reads {
		other := newStream(t, f.ctx)
		done := testenv.WaitAsync(func() error { return r.read(other) })
		testenv.Finished(t, "a read on another stream of "+r.name+", which the call only reads,", done)
	}
	var waits []<-chan error
	for _, w := range writes {
		other := newStream(t, f.ctx)
		done := testenv.WaitAsync(func() error { return w.read(other) })
		testenv.StillWaiting(t, "a read on another stream of "+w.name+", which the call writes,", done)
		waits = append(waits, done)
	}
	gate.Open()
	for i, done := range waits {
		testenv.Finished(t, "the read of "+writes[i].name, done)
	}
}

// Each call records what it writes as written and what it reads as read
// (the handle's workspace as written): a read of its output on another
// stream waits for the call, a read of its inputs does not.
func TestCallsRecordWhatTheyWriteAndWhatTheyRead(t *testing.T) {
	N := cublas.NoTrans
	type env struct {
		f          *fixture
		a, b, c, x cuda.Slice[float32]
		ws         cuda.Slice[byte]
		ab, bb, cb *cublas.Batch[float32] // of a, b and c, made before the gate holds the stream
	}
	for _, c := range []struct {
		name          string
		call          func(e env) error
		reads, writes func(e env) []operand
	}{
		{"Gemm", func(e env) error { return cublas.Gemm(e.f.h, N, N, 2, 2, 2, 1, e.a, 2, e.b, 2, 0, e.c, 2) },
			func(e env) []operand { return []operand{op("A", e.a), op("B", e.b)} },
			func(e env) []operand { return []operand{op("C", e.c), op("the workspace", e.ws)} }},
		{"GemmRowMajor", func(e env) error { return cublas.GemmRowMajor(e.f.h, N, N, 2, 2, 2, 1, e.a, 2, e.b, 2, 0, e.c, 2) },
			func(e env) []operand { return []operand{op("A", e.a), op("B", e.b)} },
			func(e env) []operand { return []operand{op("C", e.c)} }},
		{"GemmEx", func(e env) error {
			return cublas.GemmEx(e.f.h, N, N, 2, 2, 2, 1, e.a, 2, e.b, 2, 0, e.c, 2, cublas.CUBLAS_COMPUTE_32F)
		},
			func(e env) []operand { return []operand{op("A", e.a), op("B", e.b)} },
			func(e env) []operand { return []operand{op("C", e.c), op("the workspace", e.ws)} }},
		{"GemmStridedBatched", func(e env) error {
			return cublas.GemmStridedBatched(e.f.h, N, N, 2, 2, 2, 1, e.a, 2, 0, e.b, 2, 0, 0, e.c, 2, 4, 1)
		},
			func(e env) []operand { return []operand{op("A", e.a), op("B", e.b)} },
			func(e env) []operand { return []operand{op("C", e.c), op("the workspace", e.ws)} }},
		{"GemmBatchedEx", func(e env) error {
			return cublas.GemmBatchedEx(e.f.h, N, N, 2, 2, 2, 1, e.ab, 2, e.bb, 2, 0, e.cb, 2, cublas.CUBLAS_COMPUTE_32F)
		},
			func(e env) []operand { return []operand{op("A", e.a), op("B", e.b)} },
			func(e env) []operand { return []operand{op("C", e.c), op("the workspace", e.ws)} }},
		{"Gemv", func(e env) error { return cublas.Gemv(e.f.h, N, 2, 2, 1, e.a, 2, e.b, 1, 0, e.c, 1) },
			func(e env) []operand { return []operand{op("A", e.a), op("x", e.b)} },
			func(e env) []operand { return []operand{op("y", e.c), op("the workspace", e.ws)} }},
		{"Trsm", func(e env) error {
			return cublas.Trsm(e.f.h, cublas.CUBLAS_SIDE_LEFT, cublas.CUBLAS_FILL_MODE_LOWER, N, cublas.CUBLAS_DIAG_UNIT, 2, 2, 1, e.a, 2, e.c, 2)
		},
			func(e env) []operand { return []operand{op("A", e.a)} },
			func(e env) []operand { return []operand{op("B", e.c), op("the workspace", e.ws)} }},
		{"Axpy", func(e env) error { return cublas.Axpy(e.f.h, 4, 1, e.a, 1, e.c, 1) },
			func(e env) []operand { return []operand{op("x", e.a)} },
			func(e env) []operand { return []operand{op("y", e.c), op("the workspace", e.ws)} }},
		{"Scal", func(e env) error { return cublas.Scal(e.f.h, 4, 2, e.x, 1) },
			func(e env) []operand { return []operand{op("A", e.a)} },
			func(e env) []operand { return []operand{op("x", e.x), op("the workspace", e.ws)} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			testenv.OnPrimary(t, 0) // for the gate
			f := newFixture(t)
			testenv.Must(t, hostmem.Drain(testenv.Context(t)))
			home := newStream(t, f.ctx)
			e := env{f: f, a: upload(t, home, []float32{1, 2, 3, 4}), b: upload(t, home, []float32{5, 6, 7, 8}),
				c: upload(t, home, []float32{9, 9, 9, 9}), x: upload(t, home, []float32{1, 1, 1, 1})}
			ws, err := cuda.Alloc[byte](home, 1<<10)
			testenv.Must(t, err)
			testenv.Must(t, cuda.Memset(home, ws, 0))
			e.ws = ws
			batch := func(x cuda.Slice[float32]) *cublas.Batch[float32] {
				b, err := cublas.NewBatch(home, []cuda.Slice[float32]{x})
				testenv.Must(t, err)
				t.Cleanup(func() { testenv.Must(t, b.Free()) })
				return b
			}
			e.ab, e.bb, e.cb = batch(e.a), batch(e.b), batch(e.c)
			testenv.Must(t, f.h.SetWorkspace(ws))
			t.Cleanup(func() {
				testenv.Must(t, f.h.SetWorkspace(cuda.Slice[byte]{}))
				testenv.Must(t, ws.Free())
			})
			testenv.Must(t, home.Sync(testenv.Context(t)))
			testenv.Must(t, f.s.Sync(testenv.Context(t)))
			checkUses(t, f, func() error { return c.call(e) }, c.reads(e), c.writes(e))
		})
	}
}
