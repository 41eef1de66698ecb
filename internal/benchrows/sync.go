//go:build linux

package bench

import (
	"context"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Kernel durations of the wait rows.
const (
	ShortKernel = 50 * time.Microsecond
	LongKernel  = 100 * time.Millisecond
)

var syncModes = []sync.Policy{{Mode: sync.Auto}, {Mode: sync.Blocking}, {Mode: sync.Polling}}

// spinKernel loads the spin kernel into the fixture's context; the module
// is unloaded when b ends.
func (f *Fixture) spinKernel(b *testing.B) libcuda.Func {
	var fn libcuda.Func
	var m libcuda.Module
	err := libcuda.WithContext(f.Ctx, func() error {
		var err error
		if m, err = libcuda.LoadModule(kernels.PTX); err != nil {
			return err
		}
		fn, err = m.Function("spin")
		return err
	})
	if m != 0 {
		b.Cleanup(func() {
			if err := libcuda.WithContext(f.Ctx, func() error { return libcuda.ModuleUnload(m) }); err != nil {
				b.Error(err)
			}
		})
	}
	if err != nil {
		b.Fatal(err)
	}
	return fn
}

// SyncRows are package sync's rows: a wait on an idle stream, the time to
// launch a 50µs kernel and see it finish, and the CPU time spent in a wait
// for a 100ms kernel (metric cpu-ns/op).
func (f *Fixture) SyncRows() []Row {
	var rows []Row
	ctx := context.Background()
	for _, p := range syncModes {
		rows = append(rows, Row{Op: "wait, idle stream", Way: p.Mode.String(), F: func(b *testing.B) {
			f.OnThread(b, func(b *testing.B) {
				for b.Loop() {
					if err := p.Stream(ctx, 0, f.Stream); err != nil {
						b.Fatal(err)
					}
				}
			})
		}})
	}
	for _, p := range syncModes {
		rows = append(rows, Row{Op: "launch + wait, 50µs kernel", Way: p.Mode.String(), F: func(b *testing.B) {
			spin := f.spinKernel(b)
			f.OnThread(b, func(b *testing.B) {
				for b.Loop() {
					if err := spin.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 1}, 0, f.Stream, uint64(ShortKernel)); err != nil {
						b.Fatal(err)
					}
					if err := p.Stream(ctx, 0, f.Stream); err != nil {
						b.Fatal(err)
					}
				}
			})
		}})
	}
	for _, p := range syncModes {
		rows = append(rows, Row{Op: "CPU in a 100ms wait", Way: p.Mode.String(), F: func(b *testing.B) {
			spin := f.spinKernel(b)
			f.OnThread(b, func(b *testing.B) {
				var cpu time.Duration
				for b.Loop() {
					if err := spin.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 1}, 0, f.Stream, uint64(LongKernel)); err != nil {
						b.Fatal(err)
					}
					c0, err := processCPU()
					if err != nil {
						b.Skip(err)
					}
					if err := p.Stream(ctx, 0, f.Stream); err != nil {
						b.Fatal(err)
					}
					c1, _ := processCPU()
					cpu += c1 - c0
				}
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			})
		}})
	}
	return rows
}
