package cuda_test

import (
	"errors"
	"strings"
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

// Go's uint and uintptr are 64-bit numbers: a Value of one passes for a
// C++ kernel's unsigned long long, as Uint64 does (and an int's is a
// 64-bit signed number, refused there).
func TestValueOfUintPassesForUnsignedLongLong(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, []float32{1, 2})
	scale := f.fn(t, "scale<float>") // (float*, float, unsigned long long)
	g, b := cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1)
	testenv.Must(t, f.s.Launch(scale, g, b, x.Arg(), cuda.Float32(2), cuda.Value(uint(2))))
	testenv.Must(t, f.s.Launch(scale, g, b, x.Arg(), cuda.Float32(2), cuda.Value(uintptr(2))))
	if err := f.s.Launch(scale, g, b, x.Arg(), cuda.Float32(2), cuda.Value(int(2))); !errors.Is(err, cuda.ErrArgs) || !strings.Contains(err.Error(), "argument 2 is an int64") {
		t.Errorf("Value(int) for unsigned long long: %v, want ErrArgs naming an int64", err)
	}
	if err := f.s.Launch(scale, g, b, x.Arg(), cuda.Value(uint32(2)), cuda.Uint64(2)); !errors.Is(err, cuda.ErrArgs) || !strings.Contains(err.Error(), "argument 1 is an uint32 (Uint32 or Value)") {
		t.Errorf("Value(uint32) for float: %v, want ErrArgs naming a uint32", err)
	}
	if got := read(t, f.s, x); got[0] != 4 || got[1] != 8 {
		t.Errorf("got %v, want [4 8]", got)
	}
}

// AllocManaged refuses a count whose bytes do not fit the address space,
// before the driver; a nil Managed is the zero Slice.
func TestAllocManagedRefusesTooManyElements(t *testing.T) {
	f := newFixture(t)
	for _, n := range []int{1<<61 + 1, 1 << 62, int(^uint(0) >> 1)} {
		if _, err := cuda.AllocManaged[int64](f.ctx, n, cuda.AttachGlobal); !errors.Is(err, cuda.ErrLength) {
			t.Errorf("AllocManaged of %d int64s: %v, want ErrLength", n, err)
		}
	}
	var nilManaged *cuda.Managed[int32]
	if x := nilManaged.Slice(); x.Len() != 0 || x.DevicePtr() != 0 {
		t.Errorf("a nil Managed's Slice is %v", x)
	}
	if err := f.s.Launch(f.fn(t, "add_one_i32"), cuda.Grid(1, 1, 1), cuda.Block(1, 1, 1), nilManaged.Arg(), cuda.Uint64(1)); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("a launch with a nil Managed's Arg: %v, want ErrNil", err)
	}
}

// LoadModule and LoadLibrary do not write into their caller's slice: PTX
// without its NUL is copied with one, never extended in place into the
// slice's spare capacity.
func TestLoadLeavesTheCallersSliceAlone(t *testing.T) {
	f := newFixture(t)
	n := len(kernels.PTX)
	for n > 0 && kernels.PTX[n-1] == 0 {
		n--
	}
	buf := make([]byte, n+8)
	copy(buf, kernels.PTX[:n])
	buf[n] = 'X'
	mod, err := cuda.LoadModule(f.ctx, buf[:n])
	testenv.Must(t, err)
	bounded(t, "mod.Close", mod.Close)
	if buf[n] != 'X' {
		t.Fatalf("LoadModule wrote %q past the PTX it was given, into the caller's slice", buf[n])
	}
	lib, err := cuda.LoadLibrary(buf[:n])
	testenv.Must(t, err)
	bounded(t, "lib.Close", lib.Close)
	if buf[n] != 'X' {
		t.Fatalf("LoadLibrary wrote %q past the PTX it was given, into the caller's slice", buf[n])
	}
}

// bounded runs a call that may wait for a lock (a Free, a Close) and fails
// the test, instead of hanging it, when it does not return within
// testenv.Timeout; its error fails the test too.
func bounded(t testing.TB, what string, f func() error) {
	t.Helper()
	testenv.Finished(t, what, testenv.WaitAsync(f))
}
