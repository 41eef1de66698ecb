package cuda_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
)

// Module.Func finds a kernel by each of the names its documentation lists:
// the entry name, the demangled name with its parameters (spaces around
// punctuation and a leading void do not matter, nor does where const
// stands as c++filt writes it), the qualified name without parameters and
// the name without template arguments; several matches are ErrAmbiguous,
// none ErrNotFound.
func TestModuleFuncFindsEveryDocumentedName(t *testing.T) {
	f := newFixture(t)
	typed, err := cuda.LoadModule(f.ctx, kernels.TypedPTX)
	testenv.Must(t, err)
	defer typed.Close()
	for _, c := range []struct {
		mod   *cuda.Module
		name  string
		entry string // "" for an error
		err   error
	}{
		{f.mod, "add_one_i32", "add_one_i32", nil},
		{f.mod, "_ZN3ops6offsetEPffy", "_ZN3ops6offsetEPffy", nil},
		{f.mod, "ops::offset(float*, float, unsigned long long)", "_ZN3ops6offsetEPffy", nil},
		{f.mod, "ops::offset(int*, int, unsigned long long)", "_ZN3ops6offsetEPiiy", nil},
		{f.mod, "ops::offset(float *,float,unsigned long long)", "_ZN3ops6offsetEPffy", nil},
		{f.mod, "void ops::offset(int*, int, unsigned long long)", "_ZN3ops6offsetEPiiy", nil},
		{f.mod, "ops :: offset ( float* , float , unsigned long long )", "_ZN3ops6offsetEPffy", nil},
		{f.mod, "scale<float>(float*, float, unsigned long long)", "_Z5scaleIfEvPT_S0_y", nil},
		{f.mod, "scale<int>", "_Z5scaleIiEvPT_S0_y", nil},
		{f.mod, "scale<float>", "_Z5scaleIfEvPT_S0_y", nil},
		{f.mod, "ops::offset", "", cuda.ErrAmbiguous},
		{f.mod, "scale", "", cuda.ErrAmbiguous},
		{f.mod, "offset", "", cuda.ErrNotFound},
		{f.mod, "ops::offset(double*, double, unsigned long long)", "", cuda.ErrNotFound},
		{f.mod, "scale<double>", "", cuda.ErrNotFound},
		{f.mod, "add_one", "", cuda.ErrNotFound},
		{typed, "axpy(float, float const*, float*, int)", "_Z4axpyfPKfPfi", nil},
		{typed, "axpy", "_Z4axpyfPKfPfi", nil},
		{typed, "axpy(float, float*, float*, int)", "", cuda.ErrNotFound},
		{typed, "add_vecs(Vecs)", "_Z8add_vecs4Vecs", nil},
	} {
		fn, err := c.mod.Func(c.name)
		switch {
		case c.err != nil:
			if !errors.Is(err, c.err) {
				t.Errorf("Func(%q) = %v, %v; want %v", c.name, fn, err, c.err)
			}
		case err != nil:
			t.Errorf("Func(%q): %v, want %s", c.name, err, c.entry)
		case fn.Name() != c.entry:
			t.Errorf("Func(%q) found %s, want %s", c.name, fn.Name(), c.entry)
		}
	}
}

// The arguments a launch is given are the caller's to change afterwards:
// a Struct made from a []Arg, and a []Arg passed to Launch, are read when
// made or launched, not kept.
func TestStructCopiesItsFields(t *testing.T) {
	f := newFixture(t)
	typed, err := cuda.LoadModule(f.ctx, kernels.TypedPTX)
	testenv.Must(t, err)
	defer typed.Close()
	addVecs, err := typed.Func("add_vecs")
	testenv.Must(t, err)
	a := alloc(t, f.s, []float32{1, 2})
	b := alloc(t, f.s, []float32{10, 20})
	c := alloc(t, f.s, []float32{0, 0})
	fields := []cuda.Arg{a.Arg(), b.Arg(), c.Arg(), cuda.Int32(2)}
	arg := cuda.Struct(fields...)
	fields[3] = cuda.Int32(0) // changes nothing in arg
	fields[0] = b.Arg()
	testenv.Must(t, f.s.Launch(addVecs, cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), arg))
	if got := read(t, f.s, c); got[0] != 11 || got[1] != 22 {
		t.Errorf("add_vecs with the fields changed after Struct: %v, want [11 22]", got)
	}
}
