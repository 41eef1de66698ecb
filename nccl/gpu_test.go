//go:build gpu && linux

package nccl_test

import (
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/nccl"
)

// On the GPU (one is lent): a one-rank communicator's collectives give the
// right results for every type and every op, element by element
// (ncclCommInitAll on device 0; every op of one rank is its input, times
// 2 for PreMulSum). It fails, never skips, without a GPU or NCCL.
func TestOneRankCollectivesOfEveryTypeAndOpGPU(t *testing.T) {
	ranks := initAll(t, 1)
	if l, ok := nccl.Loaded(); ok {
		t.Logf("nccl-lib: %s, version %d", l.Path, l.Version)
	}
	t.Run("int8", func(t *testing.T) { collectives[int8](t, ranks) })
	t.Run("uint8", func(t *testing.T) { collectives[uint8](t, ranks) })
	t.Run("int32", func(t *testing.T) { collectives[int32](t, ranks) })
	t.Run("uint32", func(t *testing.T) { collectives[uint32](t, ranks) })
	t.Run("int64", func(t *testing.T) { collectives[int64](t, ranks) })
	t.Run("uint64", func(t *testing.T) { collectives[uint64](t, ranks) })
	t.Run("float32", func(t *testing.T) { collectives[float32](t, ranks) })
	t.Run("float64", func(t *testing.T) { collectives[float64](t, ranks) })
	t.Run("Half", func(t *testing.T) { collectives[cuda.Half](t, ranks) })
	t.Run("BFloat16", func(t *testing.T) { collectives[cuda.BFloat16](t, ranks) })
	t.Run("Float8E4M3", func(t *testing.T) { collectives[nccl.Float8E4M3](t, ranks) })
	t.Run("Float8E5M2", func(t *testing.T) { collectives[nccl.Float8E5M2](t, ranks) })
}

// NCCL 2.28 refuses FP8 Avg and PreMulSum on one rank (coll_test.go's
// refusedOnOneRank).
const oneRankFP8Refused = true

// On the GPU: an out-of-place PreMulSum all-reduce by 2 there and back,
// captured into a graph on one rank and launched 100 times, multiplies the
// buffer by 4 each launch: 1 becomes 4^100 (exact in float64).
func TestCapturedAllReduceLaunched100TimesGPU(t *testing.T) {
	ranks := initAll(t, 1)
	r := ranks[0]
	const launches = 100
	a, b := upload(t, r, []float64{1, 0.5}), upload(t, r, make([]float64, 2))
	op, err := nccl.PreMulSum(r.c, 2.0)
	testenv.Must(t, err)
	defer func() { testenv.Must(t, r.c.DestroyOp(op)) }()
	testenv.Must(t, r.s.Sync(testenv.Context(t)))
	g, err := r.s.Capture(func(s *cuda.Stream) error {
		if err := nccl.AllReduce(r.c, s, a, b, op); err != nil {
			return err
		}
		return nccl.AllReduce(r.c, s, b, a, op)
	})
	testenv.Must(t, err)
	e, err := g.Instantiate()
	testenv.Must(t, err)
	testenv.Must(t, g.Destroy())
	defer func() { testenv.Must(t, e.Destroy()) }()
	if got := download(t, r, a); got[0] != 1 {
		t.Fatalf("the capture ran the all-reduce: %v", got)
	}
	for range launches {
		testenv.Must(t, r.s.LaunchGraph(e))
	}
	testenv.Must(t, r.c.Sync(testenv.Context(t), r.s))
	want := []float64{1, 0.5}
	for range launches {
		want[0] *= 4
		want[1] *= 4
	}
	checkEqual(t, "after 100 launches", download(t, r, a), want)
}
