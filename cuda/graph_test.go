package cuda_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// A program that captures, instantiates, launches, updates and caches
// graphs with package cuda's names alone.
func TestGraphsInPackageCudasTerms(t *testing.T) {
	f := newFixture(t)
	addOne := f.fn(t, "add_one_i32")
	x := alloc(t, f.s, []int32{1, 2, 3})
	capture := func(s *cuda.Stream) error {
		return s.Launch(addOne, cuda.Grid(1, 1, 1), cuda.Block(3, 1, 1), x.Arg(), cuda.Uint64(3))
	}
	var g *cuda.Graph
	g, err := f.s.CaptureMode(cuda.CaptureThreadLocal, capture)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "g.Destroy", g.Destroy)
	var e *cuda.Exec
	e, err = g.Instantiate()
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "e.Destroy", e.Destroy)
	testenv.Must(t, f.s.LaunchGraph(e))
	g2, err := f.s.CaptureMode(cuda.CaptureRelaxed, capture)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "g2.Destroy", g2.Destroy)
	inPlace, err := e.Update(g2)
	testenv.Must(t, err)
	if !inPlace {
		t.Error("an update of the same shape was not in place")
	}
	testenv.Must(t, f.s.LaunchGraph(e))
	var c *cuda.Cached = cuda.NewCached(cuda.DefaultCaptureMode)
	defer testenv.MustBounded(t, "c.Close", c.Close)
	testenv.Must(t, f.s.RunCached(c, capture))
	testenv.Must(t, f.s.RunCached(c, capture))
	if got, want := read(t, f.s, x), []int32{5, 6, 7}; !slices.Equal(got, want) {
		t.Errorf("after 4 runs of add_one: %v, want %v", got, want)
	}
	if cuda.DefaultCaptureMode != cuda.CaptureThreadLocal || cuda.CaptureGlobal == cuda.CaptureRelaxed {
		t.Error("capture modes mixed up")
	}
}

// Each sentinel matches the driver's error it names, wrapped as package
// cuda wraps them, and no other.
func TestErrorSentinelsMatchTheirResults(t *testing.T) {
	sentinels := map[error]libcuda.Result{
		cuda.ErrOutOfMemory:           libcuda.CUDA_ERROR_OUT_OF_MEMORY,
		cuda.ErrInvalidValue:          libcuda.CUDA_ERROR_INVALID_VALUE,
		cuda.ErrNotReady:              libcuda.CUDA_ERROR_NOT_READY,
		cuda.ErrNotSupported:          libcuda.CUDA_ERROR_NOT_SUPPORTED,
		cuda.ErrPeerAccessUnsupported: libcuda.CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
		cuda.ErrCaptureUnsupported:    libcuda.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
		cuda.ErrCaptureInvalidated:    libcuda.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
		cuda.ErrCaptureIsolation:      libcuda.CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
		cuda.ErrCaptureUnjoined:       libcuda.CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
	}
	for s, r := range sentinels {
		for _, r2 := range sentinels {
			wrapped := errors.Join(errors.New("cuda: cuSomething"), r2)
			if got := errors.Is(wrapped, s); got != (r == r2) {
				t.Errorf("errors.Is(%v, sentinel of %v) = %v", r2, r, got)
			}
		}
	}
}

// The errors package cuda returns match the sentinels: an allocation too
// big for the device, and a capture broken by a refused call.
func TestErrorsOfCallsMatchTheSentinels(t *testing.T) {
	f := newFixture(t)
	if _, err := cuda.Alloc[byte](f.s, 1<<50); !errors.Is(err, cuda.ErrOutOfMemory) {
		t.Errorf("Alloc of 1 PiB: %v, want ErrOutOfMemory", err)
	}
	_, err := f.s.CaptureMode(cuda.CaptureGlobal, func(s *cuda.Stream) error {
		// A query of the capturing stream itself: refused, and it
		// invalidates the capture.
		err := libcuda.StreamQuery(s.Raw())
		if !errors.Is(err, cuda.ErrCaptureUnsupported) {
			t.Errorf("cuStreamQuery inside the capture: %v, want ErrCaptureUnsupported", err)
		}
		return nil
	})
	if !errors.Is(err, cuda.ErrCaptureInvalidated) {
		t.Errorf("the invalidated capture's error %v does not match ErrCaptureInvalidated", err)
	}
}
