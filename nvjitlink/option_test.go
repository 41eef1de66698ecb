package nvjitlink

import (
	"slices"
	"testing"
)

// Each option is the flag nvJitLink reads.
func TestOptionsAreNvJitLinksFlags(t *testing.T) {
	for _, c := range []struct {
		o    Option
		want string
	}{
		{Optimize(0), "-O0"}, {Optimize(3), "-O3"}, {LineInfo(), "-lineinfo"}, {Debug(), "-g"},
		{LTO(), "-lto"}, {PTXOutput(), "-ptx"}, {MaxRegisters(64), "-maxrregcount=64"},
		{FlushDenormals(true), "-ftz=true"}, {PreciseDivision(false), "-prec-div=false"},
		{PreciseSqrt(true), "-prec-sqrt=true"}, {FMA(false), "-fma=false"},
		{Ptxas("-v"), "-Xptxas=-v"}, {Verbose(), "-verbose"}, {WarningsAsErrors(), "-Werror"},
		{Flag("-split-compile=4"), "-split-compile=4"}, {Option{}, ""},
	} {
		if c.o.err != nil || c.o.String() != c.want {
			t.Errorf("%q (%v), want %q", c.o.String(), c.o.err, c.want)
		}
	}
	var got []string
	for _, o := range KernelsUsed("a", "b") {
		got = append(got, o.String())
	}
	if !slices.Equal(got, []string{"-kernels-used=a", "-kernels-used=b"}) {
		t.Errorf("KernelsUsed: %q", got)
	}
}
