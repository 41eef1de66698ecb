//go:build linux

package bench

import (
	"slices"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
)

// throughCgocall is p with its Go half's driver calls all made through
// runtime.cgocall (pinned calls off for its rounds): the same row as it
// measured before pinned calls, beside it, in the same run.
func throughCgocall(p pair) pair {
	return withSwitch(p, ", every call through runtime.cgocall", dl.SetPinned, false)
}

// withQueuedPinned is p with its Go half's launches, records and graph
// launches made as pinned calls too (libcuda.PinQueued): what a program
// that may turn them on gets.
func withQueuedPinned(p pair) pair {
	return withSwitch(p, ", with libcuda.PinQueued(true)", libcuda.PinQueued, true)
}

// withSwitch is p, its way named with suffix, with set(on) in force for
// each round of its Go half, and the switch as it was after.
func withSwitch(p pair, suffix string, set func(bool) bool, on bool) pair {
	setup := p.setup
	p.a += suffix
	p.setup = func(b *testing.B) (func(int) error, func(int) error) {
		a, other := setup(b)
		return func(n int) error {
			was := set(on)
			defer set(was)
			return a(n)
		}, other
	}
	return p
}

// QueueRows probe what a pinned launch can wait for: launches of a kernel
// that runs 100 µs, on one stream, each timed, until the calls have waited
// for room in the GPU's queue for a while; a row reports how many launches
// went in before the first that took over 50 µs (the queue's depth) and
// the median and longest duration of the launches after it.
func (f *Fixture) QueueRows() []Row {
	return []Row{{Op: "launch queue, 100µs kernels", Way: "cuLaunchKernel", F: func(b *testing.B) {
		f.OnThread(b, func(b *testing.B) {
			fn, buf := f.launchSetup(b)
			const n, spin, slow = 6000, 100_000, 50 * time.Microsecond
			durs := make([]time.Duration, 0, n)
			for range b.N {
				durs = durs[:0]
				for range n {
					t0 := time.Now()
					err := fn.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 1}, 0, f.Stream, buf, uint64(0), buf+8, uint64(spin))
					durs = append(durs, time.Since(t0))
					must(b, err)
				}
				must(b, libcuda.StreamSynchronize(f.Stream))
			}
			first := slices.IndexFunc(durs, func(d time.Duration) bool { return d > slow })
			b.ReportMetric(float64(first), "depth")
			if first >= 0 {
				after := slices.Clone(durs[first:])
				slices.Sort(after)
				b.ReportMetric(float64(after[len(after)/2].Nanoseconds()), "p50-after-ns")
				b.ReportMetric(float64(after[len(after)-1].Nanoseconds()), "max-after-ns")
			}
		})
	}}}
}
