package cuda_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

func TestModuleFuncFindsKernelsByEveryName(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ name, entry string }{
		{"saxpy", "saxpy"},
		{"_Z5scaleIfEvPT_S0_y", "_Z5scaleIfEvPT_S0_y"},
		{"scale<float>(float*, float, unsigned long long)", "_Z5scaleIfEvPT_S0_y"},
		{"void scale<int>(int *, int, unsigned long long)", "_Z5scaleIiEvPT_S0_y"},
		{"scale<int>", "_Z5scaleIiEvPT_S0_y"},
		{"ops::offset(int*, int, unsigned long long)", "_ZN3ops6offsetEPiiy"},
		{"ops::offset( float *, float, unsigned long long )", "_ZN3ops6offsetEPffy"},
	} {
		fn, err := f.mod.Func(c.name)
		if err != nil {
			t.Errorf("Func(%q): %v", c.name, err)
			continue
		}
		if fn.Name() != c.entry {
			t.Errorf("Func(%q) found %s, want %s", c.name, fn.Name(), c.entry)
		}
	}
}

func TestModuleFuncListsAmbiguousMatches(t *testing.T) {
	f := newFixture(t)
	for name, want := range map[string][]string{
		"scale":       {"scale<float>(float*, float, unsigned long long)", "scale<int>(int*, int, unsigned long long)"},
		"ops::offset": {"ops::offset(float*, float, unsigned long long)", "ops::offset(int*, int, unsigned long long)"},
	} {
		_, err := f.mod.Func(name)
		if !errors.Is(err, cuda.ErrAmbiguous) {
			t.Errorf("Func(%q): %v, want ErrAmbiguous", name, err)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Func(%q): the error %q does not list %s", name, err, w)
			}
		}
	}
	_, err := f.mod.Func("nope")
	if !errors.Is(err, cuda.ErrNotFound) || !strings.Contains(err.Error(), "saxpy") {
		t.Errorf("Func(nope): %v, want ErrNotFound listing the module's functions", err)
	}
	funcs := f.mod.Funcs()
	if !slices.Contains(funcs, "saxpy") || !slices.Contains(funcs, "scale<int>(int*, int, unsigned long long)") {
		t.Errorf("Funcs() = %v", funcs)
	}
}

// C++ kernels found by their demangled names launch like any other.
func TestLaunchCxxKernels(t *testing.T) {
	f := newFixture(t)
	fl := alloc(t, f.s, []float32{1, 2, 3})
	in := alloc(t, f.s, []int32{1, 2, 3})
	g, b := cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1)
	testenv.Must(t, f.s.Launch(f.fn(t, "scale<float>"), g, b, fl.Arg(), cuda.Float32(2), cuda.Uint64(3)))
	testenv.Must(t, f.s.Launch(f.fn(t, "scale<int>"), g, b, in.Arg(), cuda.Int32(-1), cuda.Uint64(3)))
	testenv.Must(t, f.s.Launch(f.fn(t, "ops::offset(float*, float, unsigned long long)"), g, b, fl.Arg(), cuda.Float32(0.5), cuda.Uint64(3)))
	testenv.Must(t, f.s.Launch(f.fn(t, "ops::offset(int*, int, unsigned long long)"), g, b, in.Arg(), cuda.Int32(10), cuda.Uint64(2)))
	if got := read(t, f.s, fl); !slices.Equal(got, []float32{2.5, 4.5, 6.5}) {
		t.Errorf("float kernels: %v", got)
	}
	if got := read(t, f.s, in); !slices.Equal(got, []int32{9, 8, -3}) {
		t.Errorf("int kernels: %v", got)
	}
}

func TestLoadModuleRejectsBadImages(t *testing.T) {
	f := newFixture(t)
	if _, err := cuda.LoadModule(f.ctx, nil); err == nil {
		t.Error("an empty image loaded")
	}
	if _, err := cuda.LoadModule(f.ctx, []byte("not ptx")); err == nil {
		t.Error("a bad image loaded")
	}
	// A PTX image with its NUL loads as well as one without.
	m, err := cuda.LoadModule(f.ctx, append(kernelsPTX()[:len(kernelsPTX()):len(kernelsPTX())], 0))
	testenv.Must(t, err)
	testenv.MustBounded(t, "m.Close", m.Close)
}

func TestFuncAttributeAndMemInfo(t *testing.T) {
	f := newFixture(t)
	saxpy := f.fn(t, "saxpy")
	n, err := saxpy.Attribute(libcuda.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
	testenv.Must(t, err)
	if n < 32 || n > 1024 {
		t.Errorf("saxpy: %d threads a block at most", n)
	}
	free, total, err := f.ctx.MemInfo()
	testenv.Must(t, err)
	if total == 0 || free > total {
		t.Errorf("MemInfo: %d free of %d", free, total)
	}
}
