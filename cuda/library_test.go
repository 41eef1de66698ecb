package cuda_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// A Library loads without a context; its module in a context has the
// kernels and globals, outlives its own Close, and goes with the
// library's.
func TestLibraryModuleInAContext(t *testing.T) {
	f := newFixture(t)
	lib, err := cuda.LoadLibrary(kernels.TypedPTX, cuda.OptimizationLevel(3))
	testenv.Must(t, err)
	mod, err := lib.Module(f.ctx)
	testenv.Must(t, err)
	axpy, err := mod.Func("axpy")
	testenv.Must(t, err)
	bias, err := cuda.Global[float32](mod, "bias")
	testenv.Must(t, err)
	testenv.Must(t, cuda.CopyToDevice(f.s, bias, []float32{1}))
	x := alloc(t, f.s, []float32{1, 2})
	y := alloc(t, f.s, []float32{1, 1})
	g, b := cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1)
	testenv.Must(t, f.s.Launch(axpy, g, b, cuda.Float32(2), x.Arg(), y.Arg(), cuda.Int32(2)))
	// Closing the Module value leaves the library's code loaded: a
	// second Module of it works, and the global kept its value.
	testenv.MustBounded(t, "mod.Close", mod.Close)
	mod2, err := lib.Module(f.ctx)
	testenv.Must(t, err)
	addBias, err := mod2.Func("add_bias")
	testenv.Must(t, err)
	testenv.Must(t, f.s.Launch(addBias, g, b, y.Arg(), cuda.Int32(2)))
	if got := read(t, f.s, y); !slices.Equal(got, []float32{4, 6}) {
		t.Errorf("got %v, want [4 6]", got)
	}
	testenv.MustBounded(t, "lib.Close", lib.Close)
	if err := testenv.BoundedErr(t, "f.s.Launch", func() error { return f.s.Launch(addBias, g, b, y.Arg(), cuda.Int32(2)) }); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("a launch after Library.Close: %v, want ErrClosed", err)
	}
	if _, err := lib.Module(f.ctx); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Module after Library.Close: %v, want ErrClosed", err)
	}
	if err := testenv.BoundedErr(t, "lib.Close", lib.Close); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("a second Close: %v, want ErrClosed", err)
	}
	// The H200's driver loads lazily: it took the bad PTX at
	// cuLibraryLoadData and refused it only once the library was used in
	// a context. Either way the refusal is INVALID_PTX, before any launch.
	bad, err := cuda.LoadLibrary([]byte(badPTX))
	if err == nil {
		var m *cuda.Module
		if m, err = bad.Module(f.ctx); err == nil {
			_, err = m.Func("broken")
		}
		testenv.MustBounded(t, "bad.Close", bad.Close)
	}
	if !errors.Is(err, libcuda.CUDA_ERROR_INVALID_PTX) {
		t.Errorf("a library of bad PTX, loaded, used in a context and its kernel looked up: %v, want CUDA_ERROR_INVALID_PTX", err)
	}
}
