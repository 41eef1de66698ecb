package sync_test

import (
	"context"
	"testing"

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
