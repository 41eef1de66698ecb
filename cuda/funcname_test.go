package cuda_test

import "testing"

// Module.Func finds the C++ kernel axpy(float, const float*, float*, int)
// however its parameters are spelled, as C++ takes them: the const before
// or after the type, any spaces, a top-level const or __restrict__ on a
// parameter, and "void" in front; and every spelling finds the same
// kernel.
func TestModuleFuncFindsQualifiersInAnySpelling(t *testing.T) {
	f := newFixture(t)
	mod := typedModule(t, f.ctx)
	want := typedFunc(t, mod, "_Z4axpyfPKfPfi").Name()
	for _, name := range []string{
		"axpy(float, const float*, float*, int)",
		"axpy(float, float const*, float*, int)",
		"axpy(float, const float *, float *, int)",
		"axpy(float, float const *, float*, int)",
		"axpy(float,const float*,float*,int)",
		"void axpy(float, const float*, float*, int)",
		"axpy(const float, const float* const, float* const, const int)",
		"axpy(float, const float* __restrict__, float* __restrict__, int)",
		"axpy(float, float const * __restrict, float *, signed int)",
	} {
		fn, err := mod.Func(name)
		if err != nil {
			t.Errorf("Func(%q): %v", name, err)
			continue
		}
		if fn.Name() != want {
			t.Errorf("Func(%q) found %s, want %s", name, fn.Name(), want)
		}
	}
	// A different type is not found: the const of the pointee matters.
	for _, name := range []string{
		"axpy(float, float*, float*, int)",
		"axpy(float, const float*, const float*, int)",
		"axpy(float, const float*, float*, unsigned)",
	} {
		if _, err := mod.Func(name); err == nil {
			t.Errorf("Func(%q) found a kernel; the module has none of that type", name)
		}
	}
}
