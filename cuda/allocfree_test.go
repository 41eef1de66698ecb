package cuda_test

import (
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// An Alloc and its Free make one Go allocation (the handle the Slices
// share), whether or not the Slice was used on its stream:
// the driver's pool does the pooling, and a backend needs no pool of its
// own on top of it.
func TestAllocFreeMakesOneGoAllocation(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		name string
		use  func(x cuda.Slice[int32]) error
	}{
		{"unused", func(cuda.Slice[int32]) error { return nil }},
		{"used on its stream", func(x cuda.Slice[int32]) error { return cuda.Zero(f.s, x) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			pair := func() {
				x, e := cuda.Alloc[int32](f.s, 256)
				if e == nil {
					e = c.use(x)
				}
				if e == nil {
					e = x.Free()
				}
				if e != nil && err == nil {
					err = e
				}
			}
			pair() // warm: the stream's and the type's first use
			allocs := testing.AllocsPerRun(200, pair)
			testenv.Must(t, err)
			sync(t, f.s)
			if allocs > 1 {
				t.Errorf("an Alloc+Free pair makes %v Go allocations, want at most 1", allocs)
			}
		})
	}
}

func BenchmarkAllocFree(b *testing.B) {
	f := newFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		x, err := cuda.Alloc[float32](f.s, 256)
		if err != nil {
			b.Fatal(err)
		}
		if err := x.Free(); err != nil {
			b.Fatal(err)
		}
	}
}
