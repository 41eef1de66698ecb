package nvjitlink

import (
	"errors"
	"strings"
	"testing"
)

// Result is an error with the C name, and errors.Is compares it; a failed
// Result returned by a wrapper is boxed once.
func TestResultIsAnError(t *testing.T) {
	var err error = NVJITLINK_ERROR_MISSING_ARCH
	if !errors.Is(err, NVJITLINK_ERROR_MISSING_ARCH) || err.Error() != "NVJITLINK_ERROR_MISSING_ARCH (2)" {
		t.Errorf("%v", err)
	}
	if n := testing.AllocsPerRun(100, func() { err = procCreate.result(uintptr(NVJITLINK_ERROR_PTX_COMPILE)) }); n != 0 {
		t.Errorf("a failed result allocates %v times", n)
	}
	le := &LinkError{Call: "nvJitLinkComplete", Err: NVJITLINK_ERROR_PTX_COMPILE, ErrorLog: "ptxas: bad"}
	if !errors.Is(le, NVJITLINK_ERROR_PTX_COMPILE) || !strings.Contains(le.Error(), "ptxas: bad") {
		t.Errorf("LinkError: %v", le)
	}
}

// Link refuses bad input before it loads anything.
func TestLinkRefusesBadInputBeforeLoading(t *testing.T) {
	ptx := PTX("a.ptx", []byte(".version 8.0\n"))
	for name, c := range map[string]struct {
		arch   string
		inputs []Input
		opts   []Option
	}{
		"virtual arch":  {"compute_90", []Input{ptx}, nil},
		"no inputs":     {"sm_90", nil, nil},
		"empty input":   {"sm_90", []Input{LTOIR("x", nil)}, nil},
		"NUL in a name": {"sm_90", []Input{PTX("a\x00", []byte("x"))}, nil},
		"empty option":  {"sm_90", []Input{ptx}, []Option{Flag("")}},
		"bad level":     {"sm_90", []Input{ptx}, []Option{Optimize(4)}},
		"no registers":  {"sm_90", []Input{ptx}, []Option{MaxRegisters(0)}},
		"empty kernel":  {"sm_90", []Input{ptx}, KernelsUsed("")},
		"empty ptxas":   {"sm_90", []Input{ptx}, []Option{Ptxas("")}},
	} {
		out, err := Link(c.arch, c.inputs, c.opts...)
		if out != nil || err == nil || errors.Is(err, ErrNoLibrary) {
			t.Errorf("%s: %v, %v; want an error before loading", name, out, err)
		}
	}
}
