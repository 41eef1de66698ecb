package cuda_test

import (
	"context"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// fixture is what most tests need: the first device's context, a stream
// and the test kernels, closed when the test ends.
type fixture struct {
	ctx *cuda.Context
	s   *cuda.Stream
	mod *cuda.Module
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	if len(devs) == 0 {
		t.Fatal("no device")
	}
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "ctx.Close", ctx.Close) })
	s := newStream(t, ctx)
	mod, err := cuda.LoadModule(ctx, kernels.PTX)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "mod.Close", mod.Close) })
	return &fixture{ctx: ctx, s: s, mod: mod}
}

func newStream(t testing.TB, ctx *cuda.Context, opts ...cuda.StreamOption) *cuda.Stream {
	t.Helper()
	s, err := ctx.NewStream(opts...)
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := testenv.BoundedErr(t, "s.Close", s.Close); err != nil && !isClosed(err) {
			t.Errorf("closing a stream: %v", err)
		}
	})
	return s
}

func (f *fixture) fn(t testing.TB, name string) *cuda.Func {
	t.Helper()
	fn, err := f.mod.Func(name)
	testenv.Must(t, err)
	return fn
}

// alloc allocates a Slice freed when the test ends, filled with vals.
func alloc[T any](t testing.TB, s *cuda.Stream, vals []T) cuda.Slice[T] {
	t.Helper()
	x, err := cuda.Alloc[T](s, len(vals))
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := testenv.BoundedErr(t, "x.Free", x.Free); err != nil && !isFreed(err) {
			t.Errorf("freeing a Slice: %v", err)
		}
	})
	testenv.Must(t, cuda.CopyToDevice(s, x, vals))
	return x
}

// read copies a Slice back to the host.
func read[T any](t testing.TB, s *cuda.Stream, x cuda.Slice[T]) []T {
	t.Helper()
	out := make([]T, x.Len())
	testenv.Must(t, cuda.CopyToHost(s, out, x))
	return out
}

func sync(t testing.TB, s *cuda.Stream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	testenv.MustBounded(t, "s.Sync", func() error { return s.Sync(ctx) })
}

func seq(n int, f func(i int) float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// otherContext creates a context of f's device besides its primary one,
// current on no thread, destroyed when the test ends: "another context"
// for a thread to have current.
func otherContext(t testing.TB, f *fixture) libcuda.Context {
	t.Helper()
	var other libcuda.Context
	// cuCtxCreate pushes the new context on the thread; pop it so that no
	// thread of the process is left with it current once it is destroyed.
	testenv.Must(t, f.ctx.Do(func() error {
		if err := libcuda.CtxCreate(&other, nil, 0, f.ctx.Device().Raw()); err != nil {
			return err
		}
		var popped libcuda.Context
		return libcuda.CtxPopCurrent(&popped)
	}))
	t.Cleanup(func() { testenv.Must(t, libcuda.CtxDestroy(other)) })
	return other
}
