package cuda

import (
	"slices"
	"strings"
	"testing"

	"github.com/ianlancetaylor/demangle"
)

// plainReturn says whether a function's return type, if it has one,
// prints before its name (not a pointer to a function or an array).
func plainReturn(a demangle.AST) bool {
	typed, ok := a.(*demangle.Typed)
	if !ok {
		return false
	}
	ft, ok := typed.Type.(*demangle.FunctionType)
	if !ok {
		return false
	}
	switch ft.Return.(type) {
	case nil, *demangle.BuiltinType, *demangle.Name, *demangle.Qualified:
		return true
	}
	return false
}

func TestDemangle(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// The test kernels, as nvcc mangles them and c++filt prints them.
		{"_Z5scaleIfEvPT_S0_y", "scale<float>(float*, float, unsigned long long)"},
		{"_Z5scaleIiEvPT_S0_y", "scale<int>(int*, int, unsigned long long)"},
		{"_ZN3ops6offsetEPffy", "ops::offset(float*, float, unsigned long long)"},
		{"_ZN3ops6offsetEPiiy", "ops::offset(int*, int, unsigned long long)"},
		// Empty parameter lists, const, references, volatile.
		{"_Z4stepv", "step()"},
		// A lone void through a template parameter is a parameter, as the
		// library prints it; "v" alone is none.
		{"_Z1AIvEvT_", "A<void>(void)"},
		{"_Z3addPKfS0_Pf", "add(float const*, float const*, float*)"},
		{"_Z1fRKiPVj", "f(int const&, unsigned int volatile*)"},
		// Nested namespaces and substitutions of prefixes.
		{"_ZN1a1b1cEPNS_1TES2_", "a::b::c(a::T*, a::T*)"},
		// Templates with integer arguments and several parameters.
		{"_Z6reduceILi256EfEvPKT0_PS0_i", "reduce<256, float>(float const*, float*, int)"},
		{"_Z4kernILb1EEvv", "kern<true>()"},
		{"_Z4kernILin3EEvv", "kern<-3>()"},
		{"_Z4kernIjLj7EEvPT_", "kern<unsigned int, 7u>(unsigned int*)"},
		// A class template as a parameter type, and std.
		{"_Z1g4pairIifEPS0_", "g(pair<int, float>, pair<int, float>*)"},
		{"_Z1hSt6size_t", "h(std::size_t)"},
		{"_ZN9__gnu_cxx1fEv", "__gnu_cxx::f()"},
		// Dh is the builtin half (not CUDA's class __half, "6__half"),
		// which c++filt and the library print "half".
		{"_Z1kDh", "k(half)"},
		{"_Z1kPK6__half", "k(__half const*)"},
		// What the hand-written demangler could not read.
		{"_Z1fPFivE", "f(int (*)())"},
		{"_ZN12_GLOBAL__N_11fEPrKf", "(anonymous namespace)::f(float const restrict*)"},
	} {
		got, ok := Demangle(c.in)
		if !ok || got != c.want {
			t.Errorf("Demangle(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
	for _, in := range []string{"saxpy", "_Z", "_Z3", "_Z3abc", "_Z5scaleIfEvPT_S9_y", "_ZN3ops6offsetE", "_Z1fT_", "_ZN3opsE"} {
		if got, ok := Demangle(in); ok {
			t.Errorf("Demangle(%q) = %q, want no result", in, got)
		}
	}
}

// The parameter types of a mangled name decide which arguments a launch
// takes, and which pointers the kernel only reads.
func TestDemangledParams(t *testing.T) {
	for _, c := range []struct {
		name     string
		text     []string
		readOnly []bool
	}{
		{"_Z3addPKfS0_Pf", []string{"float const*", "float const*", "float*"}, []bool{true, true, false}},
		{"_Z5scaleIfEvPT_S0_y", []string{"float*", "float", "unsigned long long"}, []bool{false, false, false}},
		{"_Z4stepv", []string{}, []bool{}},
		{"_Z1f4Vecsi", []string{"Vecs", "int"}, []bool{false, false}},
		{"_Z1fPKvPVKi", []string{"void const*", "int const volatile*"}, []bool{true, true}},
	} {
		sig, ok := demangleFunc(c.name)
		if !ok {
			t.Errorf("%s: not demangled", c.name)
			continue
		}
		var text []string
		var ro []bool
		for _, p := range sig.params {
			text = append(text, p.text)
			ro = append(ro, p.readOnly)
		}
		if !slices.Equal(text, c.text) || !slices.Equal(ro, c.readOnly) {
			t.Errorf("%s: types %q, read-only %v; want %q, %v", c.name, text, ro, c.text, c.readOnly)
		}
	}
	// Which codes each kind of parameter takes.
	sig, _ := demangleFunc("_Z1fPfiy4VecsPvDhPc")
	for _, c := range []struct {
		param int
		code  uint8
		want  bool
	}{
		{0, codeMem + uint8(classF32), true}, {0, codeMem + uint8(classI32), false}, {0, codeRaw, true},
		{0, codeBuffer, true}, {0, uint8(classF32), false}, {0, uint8(classU64), false},
		{1, uint8(classI32), true}, {1, uint8(classU32), false}, {1, uint8(classF32), false}, {1, codeMem + uint8(classI32), false},
		{2, uint8(classU64), true}, {2, uint8(classI64), false},
		{3, uint8(classOther), true}, {3, codeStruct, true}, {3, uint8(classI32), true}, {3, codeMem + uint8(classF32), false},
		{4, codeMem + uint8(classF64), true}, {4, codeMem + uint8(classOther), true}, {4, uint8(classU64), false},
		{5, uint8(classU16), true}, {5, uint8(classI16), false},
		{6, codeMem + uint8(classI8), true}, {6, codeMem + uint8(classU8), true}, {6, codeMem + uint8(classI32), false},
	} {
		if got := sig.params[c.param].accept>>c.code&1 != 0; got != c.want {
			t.Errorf("parameter %d (%s) takes %s: %v, want %v", c.param, sig.params[c.param].text, describeCode(c.code), got, c.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	for _, c := range [][2]string{
		{"void scale<float>(float *, float, unsigned long long)", "scale<float>(float*,float,unsigned long long)"},
		{"  add( const float* , float * )", "add(float const*,float*)"},
		{"f<pair<int, float> >(int)", "f<pair<int,float>>(int)"},
		// The fuzzer's finding: every leading const moves at once (and a
		// parameter's own consts are no part of its type).
		{"A(  const const _Complex _Complex)", "A(_Complex _Complex)"},
		{"A(  const const _Complex _Complex*)", "A(_Complex _Complex const*)"},
		{"g(const A<int> *, const *)", "g(A<int>const*,const*)"},
		{"void void h(int)", "h(int)"},
	} {
		if got := normalize(c[0]); got != c[1] {
			t.Errorf("normalize(%q) = %q, want %q", c[0], got, c[1])
		}
	}
	if a, b := normalize("add(const float*, float*)"), normalize("add(float const*, float*)"); a != b {
		t.Errorf("const before and after the type differ: %q, %q", a, b)
	}
}

// Every spelling C++ takes for one parameter type normalizes to the one
// the demangler writes.
func TestNormalizeSpellingsOfOneType(t *testing.T) {
	for want, spellings := range map[string][]string{
		"f(float const*)": {"f(const float*)", "f(float const *)", "f(const float *)", "f( const  float*)", "void f(float const*)",
			"f(const float* const)", "f(float const* __restrict__)", "f(const float *__restrict)", "f(const float*const)"},
		"f(float const volatile*)":   {"f(volatile const float*)", "f(const volatile float *)", "f(float volatile const*)", "f(volatile float const *)"},
		"f(int)":                     {"f(const int)", "f(int const)", "f(signed)", "f(signed int)", "f(int signed)"},
		"f(unsigned int)":            {"f(unsigned)", "f(unsigned int)", "f(int unsigned)", "f(const unsigned)"},
		"f(unsigned long long)":      {"f(unsigned long long int)", "f(long long unsigned)", "f(long unsigned long int)"},
		"f(long)":                    {"f(long int)", "f(signed long)", "f(long signed int)"},
		"f(short)":                   {"f(short int)", "f(signed short)"},
		"f(unsigned short)":          {"f(unsigned short int)", "f(short unsigned)"},
		"f(signed char)":             {"f(char signed)"},
		"f(float*const*)":            {"f(float *const *)", "f(float * const * const)"},
		"f(float const*restrict*)":   {"f(const float* __restrict__ *)"},
		"f(A<int,float>const&)":      {"f(const A<int, float>&)", "f(A<int,float> const &)"},
		"f(float&&)":                 {"f(float &&)", "f(float&& )"},
		"f()":                        {"f(void)", "f()", "void f( void )"},
		"f(Vecs)":                    {"f(struct Vecs)", "f(const struct Vecs)"},
		"f(ops::T const&)":           {"f(const class ops::T &)"},
		"f(float const*,float*,int)": {"f(const float *, float * const, const int)"},
	} {
		for _, s := range spellings {
			if got := normalize(s); got != want {
				t.Errorf("normalize(%q) = %q, want %q", s, got, want)
			}
		}
		if got := normalize(want); got != want {
			t.Errorf("normalize(%q) = %q: not the same", want, got)
		}
	}
	// Different types stay different.
	for _, c := range [][2]string{
		{"f(const float*)", "f(float*)"},
		{"f(float* const*)", "f(float**)"},
		{"f(unsigned)", "f(int)"},
		{"f(char)", "f(signed char)"},
		{"f(long)", "f(long long)"},
	} {
		if a, b := normalize(c[0]), normalize(c[1]); a == b {
			t.Errorf("normalize(%q) = normalize(%q) = %q", c[0], c[1], a)
		}
	}
}

func FuzzDemangle(f *testing.F) {
	for _, s := range []string{"_Z5scaleIfEvPT_S0_y", "_ZN3ops6offsetEPffy", "_Z6reduceILi256EfEvPKT0_PS0_i", "_ZN1a1b1cEPNS_1TES2_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, ok := Demangle(s)
		if ok && out == "" {
			t.Errorf("Demangle(%q) succeeded with an empty name", s)
		}
		if ok {
			// Against the library: what Demangle gives is the library's
			// text of the same name, less a return type in front.
			full, err := demangle.ToString(s, demangle.NoClones, demangle.MaxLength(maxDemangled))
			if err != nil {
				t.Errorf("Demangle(%q) = %q, but the library fails: %v", s, out, err)
			} else if a, _ := demangle.ToAST(s, demangle.NoClones); plainReturn(a) && !strings.HasSuffix(full, out) {
				t.Errorf("Demangle(%q) = %q, the library %q", s, out, full)
			}
		}
		if n := normalize(out); n != normalize(n) {
			t.Errorf("normalize is not idempotent on %q: %q, then %q", out, n, normalize(n))
		}
		if w := withoutTemplateArgs(withoutParams(out)); !strings.HasPrefix(out, w) {
			t.Errorf("the name of %q without parameters and template arguments is %q, not a prefix", out, w)
		}
	})
}
