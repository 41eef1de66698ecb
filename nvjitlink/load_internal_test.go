package nvjitlink

import (
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
)

// env is a fake environment for open and the search.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// The search follows $CUDA_PATH, conda and pip's nvidia/cu13/lib and
// nvidia/nvjitlink/lib, after the names through the loader.
func TestSearchPlacesFollowToolkitCondaAndPip(t *testing.T) { testenv.CheckSearch(t, search) }

// A path in the variable is the only place tried; a library there that
// is not nvJitLink 13 is refused, and the error names the variable.
func TestTheVariableIsTheOnlyPlaceTried(t *testing.T) {
	bad := filepath.Join(testenv.TempDir(t), "libnvJitLink.so.13")
	_, err := open(env(map[string]string{EnvLibrary: bad}))
	var le *LoadError
	if !errors.As(err, &le) || !errors.Is(err, ErrNoLibrary) || !le.FromEnv || len(le.Tried) != 1 || le.Tried[0].Path != bad {
		t.Fatalf("got %v; want a LoadError from %s that tried only %s", err, EnvLibrary, bad)
	}
	if !strings.Contains(err.Error(), EnvLibrary) {
		t.Errorf("the error does not name %s: %v", EnvLibrary, err)
	}
	if runtime.GOOS != "linux" {
		return
	}
	_, err = open(env(map[string]string{EnvLibrary: "libc.so.6"}))
	if err == nil || !strings.Contains(err.Error(), "no __nvJitLinkCreate_13_0") {
		t.Errorf("libc taken as nvJitLink: %v", err)
	}
}

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
		opts   []string
	}{
		"virtual arch":  {"compute_90", []Input{ptx}, nil},
		"no inputs":     {"sm_90", nil, nil},
		"empty input":   {"sm_90", []Input{LTOIR("x", nil)}, nil},
		"NUL in a name": {"sm_90", []Input{PTX("a\x00", []byte("x"))}, nil},
		"empty option":  {"sm_90", []Input{ptx}, []string{""}},
	} {
		out, err := Link(c.arch, c.inputs, c.opts...)
		if out != nil || err == nil || errors.Is(err, ErrNoLibrary) {
			t.Errorf("%s: %v, %v; want an error before loading", name, out, err)
		}
	}
}
