package cuda

import (
	"strings"
	"testing"
)

func TestDemangle(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// The test kernels, as nvcc mangles them and c++filt prints them.
		{"_Z5scaleIfEvPT_S0_y", "scale<float>(float*, float, unsigned long long)"},
		{"_Z5scaleIiEvPT_S0_y", "scale<int>(int*, int, unsigned long long)"},
		{"_ZN3ops6offsetEPffy", "ops::offset(float*, float, unsigned long long)"},
		{"_ZN3ops6offsetEPiiy", "ops::offset(int*, int, unsigned long long)"},
		// Empty parameter lists, const, references, volatile.
		{"_Z4stepv", "step()"},
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
		{"_Z1kDh", "k(__half)"},
	} {
		got, ok := Demangle(c.in)
		if !ok || got != c.want {
			t.Errorf("Demangle(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
	for _, in := range []string{"saxpy", "_Z", "_Z3", "_Z3abc", "_Z1fPFivE", "_Z5scaleIfEvPT_S9_y", "_Z1fT_", "_ZN3opsE"} {
		if got, ok := Demangle(in); ok {
			t.Errorf("Demangle(%q) = %q, want no result", in, got)
		}
	}
}

func TestNormalize(t *testing.T) {
	for _, c := range [][2]string{
		{"void scale<float>(float *, float, unsigned long long)", "scale<float>(float*,float,unsigned long long)"},
		{"  add( const float* , float * )", "add(float const*,float*)"},
		{"f<pair<int, float> >(int)", "f<pair<int,float>>(int)"},
	} {
		if got := normalize(c[0]); got != c[1] {
			t.Errorf("normalize(%q) = %q, want %q", c[0], got, c[1])
		}
	}
	if a, b := normalize("add(const float*, float*)"), normalize("add(float const*, float*)"); a != b {
		t.Errorf("const before and after the type differ: %q, %q", a, b)
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
		if n := normalize(out); n != normalize(n) {
			t.Errorf("normalize is not idempotent on %q: %q, then %q", out, n, normalize(n))
		}
		if w := withoutTemplateArgs(withoutParams(out)); !strings.HasPrefix(out, w) {
			t.Errorf("the name of %q without parameters and template arguments is %q, not a prefix", out, w)
		}
	})
}
