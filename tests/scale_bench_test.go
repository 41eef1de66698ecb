//go:build linux

package tests

import (
	"flag"
	"strconv"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/scalebench"
	"github.com/purecuda/purecuda/internal/testenv"
)

var scaleSizes = flag.String("scale.max", "", "run the scale benchmarks only at N and M up to this `number`")

// BenchmarkScale prints how the costs of wrap, use, free, drain and waits
// grow with the number of live buffers, retired registrations, pending
// releases and waiters (internal/scalebench): ns/op, B/buffer, ns/reg,
// p50-ns, max-ns, p99-ns and cores per size.
//
//	go test ./tests -run '^$' -bench Scale -benchtime 1x
func BenchmarkScale(b *testing.B) {
	ctx := testenv.PrimaryContext(b, 0)
	// On the simulator, one stream held at the gate and the others behind
	// it (scalebench.HoldEach says why).
	scalebench.HoldEach = testenv.OnGPU
	z := scalebench.DefaultSizes
	if *scaleSizes != "" {
		max, err := strconv.Atoi(*scaleSizes)
		testenv.Must(b, err)
		z = z.UpTo(max)
	}
	for _, c := range scalebench.Cases(ctx, z) {
		b.Run(strings.ReplaceAll(c.Name, "/", "-"), c.F)
	}
}
