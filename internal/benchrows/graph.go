//go:build linux

package bench

import (
	"context"
	"errors"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// GraphKernels is the number of kernels in the graph rows' graphs.
const GraphKernels = 100

// graphInts is the size, in int32, of the buffer the graph rows' kernels add to.
const graphInts = 256

// graphSetup is what a graph row needs: the add_one kernel, a device buffer
// for it, and a way to issue the 100 launches.
type graphSetup struct {
	addOne libcuda.Func
	buf    libcuda.Deviceptr
}

// graphSetup loads the kernels and allocates the buffer, in the fixture's
// context (current: called inside OnThread); both go when b ends.
func (f *Fixture) graphSetup(b *testing.B) graphSetup {
	m, err := libcuda.LoadModule(kernels.PTX)
	if err != nil {
		b.Fatal(err)
	}
	var gs graphSetup
	if gs.addOne, err = m.Function("add_one_i32"); err != nil {
		b.Fatal(err)
	}
	if err := libcuda.MemAlloc(&gs.buf, graphInts*4); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		err := libcuda.WithContext(f.Ctx, func() error {
			return errors.Join(libcuda.MemFree(gs.buf), libcuda.ModuleUnload(m))
		})
		if err != nil {
			b.Error(err)
		}
	})
	return gs
}

// launches issues the 100 kernels on s; with shift, the last one adds to
// another part of the buffer, so that two captures differ in a parameter.
func (gs graphSetup) launches(s libcuda.Stream, shift bool) error {
	for i := range GraphKernels {
		buf, n := gs.buf, uint64(graphInts)
		if shift && i == GraphKernels-1 {
			buf, n = gs.buf+4, n-1
		}
		if err := gs.addOne.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: graphInts}, 0, s, buf, n); err != nil {
			return err
		}
	}
	return nil
}

func (gs graphSetup) capture(b *testing.B, s libcuda.Stream, shift bool) *graph.Graph {
	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error { return gs.launches(s, shift) })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := g.Destroy(); err != nil {
			b.Error(err)
		}
	})
	return g
}

func (gs graphSetup) instantiate(b *testing.B, g *graph.Graph) *graph.Exec {
	e, err := g.Instantiate()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := e.Destroy(); err != nil {
			b.Error(err)
		}
	})
	return e
}

// GraphRows are package graph's rows: 100 small kernels launched as one
// graph against the same 100 launches on a stream (each op launches and
// waits for the work), an executable graph updated in place against one
// instantiated again, and a cached capture run against capturing and
// instantiating anew.
func (f *Fixture) GraphRows() []Row {
	ctx := context.Background()
	wait := func(b *testing.B) {
		if err := sync.Stream(ctx, 0, f.Stream); err != nil {
			b.Fatal(err)
		}
	}
	const launch100 = "100 small kernels, launch + wait"
	const update100 = "100-kernel graph, update"
	const run100 = "100-kernel capture + launch + wait"
	return []Row{
		{Op: launch100, Way: "graph", F: func(b *testing.B) {
			f.OnThread(b, func(b *testing.B) {
				gs := f.graphSetup(b)
				e := gs.instantiate(b, gs.capture(b, f.Stream, false))
				if err := e.Upload(f.Stream); err != nil {
					b.Fatal(err)
				}
				wait(b)
				for b.Loop() {
					if err := e.Launch(f.Stream); err != nil {
						b.Fatal(err)
					}
					wait(b)
				}
			})
		}},
		{Op: launch100, Way: "stream", F: func(b *testing.B) {
			f.OnThread(b, func(b *testing.B) {
				gs := f.graphSetup(b)
				for b.Loop() {
					if err := gs.launches(f.Stream, false); err != nil {
						b.Fatal(err)
					}
					wait(b)
				}
			})
		}},
		{Op: update100, Way: "Exec.Update (in place)", F: func(b *testing.B) {
			f.OnThread(b, func(b *testing.B) {
				gs := f.graphSetup(b)
				gr := [2]*graph.Graph{gs.capture(b, f.Stream, false), gs.capture(b, f.Stream, true)}
				e := gs.instantiate(b, gr[0])
				i := 0
				for b.Loop() {
					i++
					inPlace, err := e.Update(gr[i%2])
					if err != nil {
						b.Fatal(err)
					}
					if !inPlace {
						b.Fatal("the update was not in place")
					}
				}
			})
		}},
		{Op: update100, Way: "Instantiate + Destroy", F: func(b *testing.B) {
			f.OnThread(b, func(b *testing.B) {
				gs := f.graphSetup(b)
				g := gs.capture(b, f.Stream, true)
				for b.Loop() {
					e, err := g.Instantiate()
					if err != nil {
						b.Fatal(err)
					}
					if err := e.Destroy(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}},
		{Op: run100, Way: "Cached.Run", F: func(b *testing.B) {
			f.OnThread(b, func(b *testing.B) {
				gs := f.graphSetup(b)
				c := graph.NewCached(graph.DefaultMode)
				b.Cleanup(func() {
					if err := c.Close(); err != nil {
						b.Error(err)
					}
				})
				i := 0
				for b.Loop() {
					i++
					if err := c.Run(f.Stream, func(s libcuda.Stream) error { return gs.launches(s, i%2 == 1) }); err != nil {
						b.Fatal(err)
					}
					wait(b)
				}
			})
		}},
		{Op: run100, Way: "Capture + Instantiate", F: func(b *testing.B) {
			f.OnThread(b, func(b *testing.B) {
				gs := f.graphSetup(b)
				i := 0
				for b.Loop() {
					i++
					g, err := graph.Capture(f.Stream, graph.DefaultMode, func(s libcuda.Stream) error { return gs.launches(s, i%2 == 1) })
					if err != nil {
						b.Fatal(err)
					}
					e, err := g.Instantiate()
					if err != nil {
						b.Fatal(err)
					}
					err = errors.Join(e.Launch(f.Stream), g.Destroy())
					wait(b)
					if err := errors.Join(err, e.Destroy()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}},
	}
}
