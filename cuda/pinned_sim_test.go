//go:build !gpu

package cuda_test

import (
	"fmt"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
)

// The chunked four-stream pattern through one Pin and sixteen views (or
// []T inside it): every copy, both ways, is asynchronous (each returns
// while its stream is held), none is staged as pageable (the simulator's
// pageable_copies), and the views register nothing more.
func TestChunkedFourStreamsThroughViewsOfOnePin(t *testing.T) {
	testenv.OnPrimary(t, 0)
	for _, asSlices := range []bool{false, true} {
		t.Run(fmt.Sprintf("asSlices=%v", asSlices), func(t *testing.T) {
			f := newFixture(t)
			streams := make([]*cuda.Stream, 4)
			gates := make([]*testenv.Gate, 4)
			for i := range streams {
				streams[i] = newStream(t, f.ctx, cuda.NonBlocking())
				gates[i] = testenv.NewGate(t)
			}
			const n = 16 * 8
			// Freed by cleanups that run after the gates open (a Free
			// waits for copies in progress, which wait for the gates).
			p, err := cuda.AllocPinned[int32](f.ctx, n)
			testenv.Must(t, err)
			t.Cleanup(func() { testenv.MustBounded(t, "p.Free", p.Free) })
			for i := range p.Data() {
				p.Data()[i] = int32(i)
			}
			x := alloc(t, streams[0], make([]int32, n))
			sync(t, streams[0])
			// Releases of earlier tests' host memory end first: an
			// unregister is a device-wide fence, which would wait for
			// the held streams and block this test's launches meanwhile
			// (as newOrderFixture does).
			testenv.Must(t, hostmem.Drain(testenv.Context(t)))
			for i, s := range streams {
				gates[i].Hold(t, s.Raw())
			}
			registers := hostmem.ReadStats().Registers
			pageable := testenv.SimStat(t, "pageable_copies")
			addOne := f.fn(t, "add_one_i32")
			done := testenv.WaitAsync(func() error { return chunked(addOne, streams, p, x, asSlices) })
			testenv.Finished(t, "the 32 copies and 16 launches on held streams", done)
			if d := testenv.SimStat(t, "pageable_copies") - pageable; d != 0 {
				t.Errorf("%d copies were pageable", d)
			}
			if d := hostmem.ReadStats().Registers - registers; d != 0 {
				t.Errorf("the views registered memory %d times", d)
			}
			for _, g := range gates {
				g.Open()
			}
			for _, s := range streams {
				sync(t, s)
			}
			for i, v := range p.Data() {
				if v != int32(i+1) {
					t.Fatalf("element %d = %d, want %d", i, v, i+1)
				}
			}
		})
	}
}

// chunked is the four-stream pattern: n elements in 16 chunks, chunk i on
// stream i%4, copied in, incremented and copied back through the views of
// one Pin (or through []T inside it when asSlices). It may run on another
// goroutine than the test's: it returns its error.
func chunked(addOne *cuda.Func, streams []*cuda.Stream, p *cuda.Pinned[int32], x cuda.Slice[int32], asSlices bool) error {
	const chunks = 16
	n := p.Len() / chunks
	for i := range chunks {
		s := streams[i%len(streams)]
		d, err := x.Slice(i*n, (i+1)*n)
		if err != nil {
			return err
		}
		v, err := p.Slice(i*n, (i+1)*n)
		if err != nil {
			return err
		}
		if asSlices {
			err = cuda.CopyToDevice(s, d, p.Data()[i*n:(i+1)*n])
		} else {
			err = cuda.CopyToDevice(s, d, v)
		}
		if err != nil {
			return err
		}
		if err := s.Launch(addOne, cuda.Grid(1, 1, 1), cuda.Block(n, 1, 1), d.Arg(), cuda.Uint64(uint64(n))); err != nil {
			return err
		}
		if asSlices {
			err = cuda.CopyToHost(s, p.Data()[i*n:(i+1)*n], d)
		} else {
			err = cuda.CopyToHost(s, v, d)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
