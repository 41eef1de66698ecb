//go:build linux

package tests

import (
	"testing"

	bench "github.com/purecuda/purecuda/internal/benchrows"
)

// BenchmarkCall compares the generated call path with purego's SyscallN and
// RegisterFunc on the same driver functions. Compare ways with benchstat;
// tools/bench prints the same rows beside a C baseline.
func BenchmarkCall(b *testing.B) {
	f := benchFixture(b)
	for _, r := range f.CallRows() {
		b.Run(r.Op+"/"+r.Way, r.F)
	}
}

// BenchmarkRows runs tools/bench's Go rows, so that they can be tried on
// the simulator: go test -run XXX -bench Rows/launch ./tests.
func BenchmarkRows(b *testing.B) {
	f := benchFixture(b)
	var rows []bench.Row
	for _, r := range [][]bench.Row{f.SyncRows(), f.GraphRows(), f.HostmemRows(), f.StallRows()} {
		rows = append(rows, r...)
	}
	for _, r := range rows {
		b.Run(r.Op+"/"+r.Way, r.F)
	}
}

// benchFixture sets up tools/bench's fixture for b and closes it after.
func benchFixture(b *testing.B) *bench.Fixture {
	f, err := bench.Setup()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	})
	return f
}
