//go:build linux

package bench

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/libcuda"
)

// ProfilePrefix starts the names of the rows that exist for a CPU profile
// of one operation (bench -cpuprofile FILE -run '^profile: '): each loops
// over the Go half of a paired row for the whole benchtime, so that the
// profile holds enough samples of it; tools/bench runs them only when -run
// is given.
const ProfilePrefix = "profile: "

// ProfileRows are the Go halves of the paired launch rows as loops of
// rounds (1000 launches, then a synchronize) for a CPU profile:
// Stream.Launch with every check and record on, and libcuda's
// Func.Launch.
func (f *Fixture) ProfileRows() []Row {
	return []Row{
		{Op: ProfilePrefix + "launch, 4 args, then a wait each 1000", Way: "cuda.Stream.Launch", F: func(b *testing.B) {
			f.OnThread(b, func(b *testing.B) {
				sl := newStreamLaunch(b)
				for b.Loop() {
					must(b, sl.round(1000))
				}
			})
		}},
		{Op: ProfilePrefix + "launch, 4 args, then a wait each 1000", Way: "Function.Launch", F: func(b *testing.B) {
			f.OnThread(b, func(b *testing.B) {
				m, err := libcuda.LoadModule(kernels.PTX)
				must(b, err)
				fn, err := m.Function("sum_i64")
				must(b, err)
				var buf libcuda.Deviceptr
				must(b, libcuda.MemAlloc(&buf, 64))
				defer func() { must(b, errors.Join(libcuda.MemFree(buf), libcuda.ModuleUnload(m))) }()
				one := libcuda.Dim3{X: 1}
				for b.Loop() {
					for range 1000 {
						must(b, fn.Launch(one, one, 0, f.Stream, buf, uint64(0), buf+8, uint64(0)))
					}
					must(b, libcuda.StreamSynchronize(f.Stream))
				}
			})
		}},
	}
}
