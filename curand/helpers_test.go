package curand_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/curand"
	"github.com/purecuda/purecuda/internal/testenv"
)

type fixture struct {
	ctx *cuda.Context
	s   *cuda.Stream
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, ctx.Close()) })
	s, err := ctx.NewStream(cuda.NonBlocking())
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("closing a stream: %v", err)
		}
	})
	return &fixture{ctx: ctx, s: s}
}

func (f *fixture) gen(t testing.TB, kind curand.RngType) *curand.Generator {
	t.Helper()
	g, err := curand.New(f.s, kind)
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := g.Close(); err != nil && !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("closing a generator: %v", err)
		}
	})
	return g
}

func alloc[T any](t testing.TB, s *cuda.Stream, n int) cuda.Slice[T] {
	t.Helper()
	x, err := cuda.Alloc[T](s, n)
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := x.Free(); err != nil && !errors.Is(err, cuda.ErrFreed) {
			t.Errorf("freeing: %v", err)
		}
	})
	return x
}

func download[T any](t testing.TB, s *cuda.Stream, x cuda.Slice[T]) []T {
	t.Helper()
	out := make([]T, x.Len())
	testenv.Must(t, cuda.CopyToHost(s, out, x))
	return out
}
