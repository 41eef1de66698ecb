//go:build linux

package tests

import (
	"context"
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/libcuda"
)

// BenchmarkHostmemCycle is the steady state of a wrap/use/free loop: the
// memory's registration is retired and revived, so no driver call
// registers or unregisters; allocs/op is what the cycle costs the GC.
func BenchmarkHostmemCycle(b *testing.B) {
	ctx := primaryContext(b, 0)
	onThread(b, ctx)
	var s libcuda.Stream
	must(b, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	mem := make([]byte, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		buf, err := hostmem.Wrap(ctx, mem)
		must(b, err)
		must(b, buf.Use(s))
		must(b, buf.Free())
	}
	b.StopTimer()
	must(b, hostmem.Drain(context.Background()))
	must(b, libcuda.StreamDestroy(s))
}
