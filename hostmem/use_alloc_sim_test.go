//go:build !gpu

package hostmem_test

import (
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/libcuda"
)

// A Buffer.Use inside each capture of a Cached adds no allocation to a
// run (issue 17): the lease's function is made once per buffer, the
// leases are reused, and the update that finds the run before finished
// keeps its tracking event and releases its lease in place. A run
// allocates at most twice either way.
func TestUseInsideACaptureAllocatesNothing(t *testing.T) {
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	s := newStream(t)
	d := deviceInt64(t)
	drain(t)
	b, err := hostmem.Wrap(cu, make([]float64, 1))
	must(t, err)
	allocs := func(use bool) float64 {
		c := graph.NewCached(graph.DefaultMode)
		body := func(s libcuda.Stream) error {
			if err := libcuda.MemcpyDtoHAsync(b.Pointer(), d, 8, s); err != nil {
				return err
			}
			if use {
				return b.Use(s)
			}
			return nil
		}
		var err error
		run := func() {
			if err == nil {
				err = c.Run(s, body)
			}
			if err == nil {
				err = libcuda.StreamSynchronize(s)
			}
		}
		run()
		run()
		n := testing.AllocsPerRun(100, run)
		must(t, err)
		must(t, c.Close())
		return n
	}
	with, without := allocs(true), allocs(false)
	t.Logf("allocations a run: %v with the Use, %v without", with, without)
	if with > without || with > 2 {
		t.Errorf("a Cached.Run whose capture Use()s the buffer: %v allocations, %v without the Use; want no more, and at most 2", with, without)
	}
	must(t, b.Free())
	drain(t)
}
