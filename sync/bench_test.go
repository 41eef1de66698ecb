package sync_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// BenchmarkIdleWait puts the idle path of a wait beside the one driver
// query it makes, in the same run, so that their difference is what
// package sync adds (issue 17):
//
//	go test ./sync -run '^$' -bench IdleWait -count 10 | benchstat -
func BenchmarkIdleWait(b *testing.B) {
	testenv.OnPrimary(b, 0)
	s := testenv.NewStream(b)
	var ev libcuda.Event
	testenv.Must(b, libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	b.Cleanup(func() { testenv.Must(b, libcuda.EventDestroy(ev)) })
	testenv.Must(b, libcuda.EventRecord(ev, s))
	testenv.Must(b, libcuda.StreamSynchronize(s))
	ctx := context.Background()
	for _, c := range []struct {
		name string
		f    func() error
	}{
		{"stream/cuStreamQuery", func() error { return libcuda.StreamQuery(s) }},
		{"stream/sync.Stream", func() error { return sync.Stream(ctx, 0, s) }},
		{"event/cuEventQuery", func() error { return libcuda.EventQuery(ev) }},
		{"event/sync.Event", func() error { return sync.Event(ctx, ev) }},
		{"event/sync.EventDone", func() error { _, err := sync.EventDone(ev); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.f(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIdleWaitAbove times what a wait on finished work adds to its
// one driver query, from rounds of each run in turns (which goes first
// changing from pair to pair), so that the machine's drift between
// sub-benchmarks does not blur a difference of a few nanoseconds: metric
// above-ns is the median over the pairs of (wait - query) per operation
// (issue 29). Run it once: go test ./sync -run '^$' -bench IdleWaitAbove -benchtime 1x
func BenchmarkIdleWaitAbove(b *testing.B) {
	testenv.OnPrimary(b, 0)
	s := testenv.NewStream(b)
	var ev libcuda.Event
	testenv.Must(b, libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	b.Cleanup(func() { testenv.Must(b, libcuda.EventDestroy(ev)) })
	testenv.Must(b, libcuda.EventRecord(ev, s))
	testenv.Must(b, libcuda.StreamSynchronize(s))
	ctx := context.Background()
	streamQuery := func() error { return libcuda.StreamQuery(s) }
	eventQuery := func() error { return libcuda.EventQuery(ev) }
	for _, c := range []struct {
		name        string
		wait, query func() error
	}{
		{"sync.Stream", func() error { return sync.Stream(ctx, 0, s) }, streamQuery},
		{"sync.Event", func() error { return sync.Event(ctx, ev) }, eventQuery},
		{"sync.EventDone", func() error { _, err := sync.EventDone(ev); return err }, eventQuery},
	} {
		b.Run(c.name, func(b *testing.B) {
			const perRound, pairs = 20000, 31
			round := func(f func() error) float64 {
				t0 := time.Now()
				for range perRound {
					if err := f(); err != nil {
						b.Fatal(err)
					}
				}
				return float64(time.Since(t0).Nanoseconds()) / perRound
			}
			round(c.wait)
			round(c.query)
			var diffs, waits, queries []float64
			for range b.N {
				for i := range pairs {
					var w, q float64
					if i%2 == 0 {
						w, q = round(c.wait), round(c.query)
					} else {
						q, w = round(c.query), round(c.wait)
					}
					diffs, waits, queries = append(diffs, w-q), append(waits, w), append(queries, q)
				}
			}
			b.ReportMetric(median(diffs), "above-ns")
			b.ReportMetric(median(waits), "wait-ns")
			b.ReportMetric(median(queries), "query-ns")
		})
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
