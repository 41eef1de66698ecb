package cuda_test

import (
	"sync/atomic"
	"testing"

	"github.com/purecuda/purecuda/cuda"
)

// BenchmarkOps measures the other calls' costs and allocations, for the
// record (-benchmem); only Launch is held to 0 allocations.
func BenchmarkOps(b *testing.B) {
	f := newFixture(b)
	b.Run("AllocFree", func(b *testing.B) {
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
		sync(b, f.s)
	})
	b.Run("CopyToDevicePageable", func(b *testing.B) {
		x := alloc(b, f.s, make([]float32, 256))
		host := make([]float32, 256)
		b.ReportAllocs()
		for b.Loop() {
			if err := cuda.CopyToDevice(f.s, x, host); err != nil {
				b.Fatal(err)
			}
		}
		sync(b, f.s)
	})
	b.Run("CopyToDevicePinned", func(b *testing.B) {
		x := alloc(b, f.s, make([]float32, 256))
		host, err := cuda.AllocPinned[float32](f.ctx, 256)
		if err != nil {
			b.Fatal(err)
		}
		defer host.Free()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := cuda.CopyToDevice(f.s, x, host); err != nil {
				b.Fatal(err)
			}
			if i%256 == 255 {
				sync(b, f.s)
			}
		}
		sync(b, f.s)
	})
	b.Run("Memset", func(b *testing.B) {
		x := alloc(b, f.s, make([]float32, 256))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := cuda.Memset(f.s, x, 1); err != nil {
				b.Fatal(err)
			}
			if i%256 == 255 {
				sync(b, f.s)
			}
		}
		sync(b, f.s)
	})
	b.Run("HostFunc", func(b *testing.B) {
		fn := func() {}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := f.s.HostFunc(fn); err != nil {
				b.Fatal(err)
			}
			if i%256 == 255 {
				sync(b, f.s)
			}
		}
		sync(b, f.s)
	})
	// A host function on the driver's thread and back, 100 to a Sync (as
	// bench's row "host function in a stream, then a wait each 100"):
	// the entry into Go on the driver's thread is most of it.
	b.Run("HostFuncOnDriverThread", func(b *testing.B) {
		var ran atomic.Int64
		fn := func() { ran.Add(1) }
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := f.s.HostFuncOnDriverThread(fn); err != nil {
				b.Fatal(err)
			}
			if i%100 == 99 {
				sync(b, f.s)
			}
		}
		sync(b, f.s)
		if n := ran.Load(); n != int64(b.N) {
			b.Fatalf("%d of %d host functions ran", n, b.N)
		}
	})
	b.Run("RecordClose", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ev, err := f.s.Record()
			if err != nil {
				b.Fatal(err)
			}
			if err := ev.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
