//go:build !gpu && linux

package nvjitlink_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/nvjitlink"
)

// These tests run Link on the nvJitLink stand-in (internal/testenv's
// JitLinkSim): what Link promises about the options, the inputs, the
// logs and the handle, each failing when the promise breaks.

// sim loads the stand-in for the test.
func sim(t *testing.T) *testenv.JitLinkSim {
	t.Helper()
	s := testenv.NewJitLinkSim(t)
	testenv.Must(t, nvjitlink.Load())
	if lib, ok := nvjitlink.Loaded(); !ok || lib.Path != s.Path {
		t.Fatalf("Loaded() = %+v, %v; want the stand-in %s", lib, ok, s.Path)
	}
	return s
}

// lines are what the stand-in was given last, one a line.
func lines(t *testing.T, s *testenv.JitLinkSim) []string {
	return strings.Split(strings.TrimSpace(s.Last(t)), "\n")
}

// Link passes -arch= from the architecture first, then the caller's
// options, adds -lto only when an input is LTO-IR and the caller did not
// give it, names unnamed inputs "input N", and gives the cubin and the
// info log; the handle is destroyed.
func TestLinkPassesItsOptionsAndInputs(t *testing.T) {
	s := sim(t)
	live := s.Stat(t, "live")
	for _, c := range []struct {
		name   string
		inputs []nvjitlink.Input
		opts   []string
		want   []string
		cubin  string
	}{
		{"PTX", []nvjitlink.Input{nvjitlink.PTX("a.ptx", []byte("ptx a")), {Type: nvjitlink.NVJITLINK_INPUT_CUBIN, Data: []byte("cubin")}},
			[]string{"-O3"},
			[]string{"opt -arch=sm_90", "opt -O3", "input 2 a.ptx 5", "input 1 input 1 5"}, "CUBIN sm_90 a.ptx input 1"},
		{"LTO-IR", []nvjitlink.Input{nvjitlink.LTOIR("k.ltoir", []byte("ir")), nvjitlink.Cubin("c.cubin", []byte("c"))},
			nil,
			[]string{"opt -arch=sm_90", "opt -lto", "input 3 k.ltoir 2", "input 1 c.cubin 1"}, "CUBIN sm_90 k.ltoir c.cubin"},
		{"LTO-IR with -lto given", []nvjitlink.Input{nvjitlink.LTOIR("k.ltoir", []byte("ir")), nvjitlink.Fatbin("f.fatbin", []byte("fat"))},
			[]string{"-lto", "-lineinfo"},
			[]string{"opt -arch=sm_90", "opt -lto", "opt -lineinfo", "input 3 k.ltoir 2", "input 4 f.fatbin 3"}, "CUBIN sm_90 k.ltoir f.fatbin"},
		{"LTO-IR last", []nvjitlink.Input{nvjitlink.PTX("a.ptx", []byte("p")), nvjitlink.LTOIR("k.ltoir", []byte("ir"))},
			[]string{"-O2"},
			[]string{"opt -arch=sm_90", "opt -O2", "opt -lto", "input 2 a.ptx 1", "input 3 k.ltoir 2"}, "CUBIN sm_90 a.ptx k.ltoir"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := nvjitlink.Link("sm_90", c.inputs, flags(c.opts)...)
			testenv.Must(t, err)
			if got := lines(t, s); !slices.Equal(got, c.want) {
				t.Errorf("the library was given\n%q\nwant\n%q", got, c.want)
			}
			if string(out.Cubin) != c.cubin {
				t.Errorf("cubin %q, want %q", out.Cubin, c.cubin)
			}
			if want := "info    : linked " + string(rune('0'+len(c.inputs))) + " inputs"; out.InfoLog != want {
				t.Errorf("info log %q, want %q", out.InfoLog, want)
			}
			if n := s.Stat(t, "live"); n != live {
				t.Errorf("%d handles live after Link, want %d", n, live)
			}
		})
	}
}

// Link does not write into the caller's options: an options slice with
// room to spare keeps what it holds beyond its length.
func TestLinkDoesNotWriteIntoTheCallersOptions(t *testing.T) {
	sim(t)
	backing := flags([]string{"-O3", "spare", "spare"})
	before := fmt.Sprint(backing)
	opts := backing[:1]
	if _, err := nvjitlink.Link("sm_90", []nvjitlink.Input{nvjitlink.LTOIR("k", []byte("ir"))}, opts...); err != nil {
		t.Fatal(err)
	}
	if after := fmt.Sprint(backing); after != before {
		t.Errorf("the caller's options became %s, were %s", after, before)
	}
}

// A link that fails is a *LinkError naming the call, matching its
// Result, with the error log; the handle is destroyed on every failure.
func TestAFailedLinkIsALinkErrorAndDestroysTheHandle(t *testing.T) {
	s := sim(t)
	for _, c := range []struct {
		name   string
		inputs []nvjitlink.Input
		opts   []string
		call   string
		result nvjitlink.Result
		log    string
	}{
		{"bad PTX", []nvjitlink.Input{nvjitlink.PTX("ok.ptx", []byte("p")), nvjitlink.PTX("bad.ptx", []byte("BAD"))}, nil,
			"nvJitLinkAddData(bad.ptx)", nvjitlink.NVJITLINK_ERROR_PTX_COMPILE, "bad.ptx: syntax error"},
		{"unnamed bad input", []nvjitlink.Input{{Type: nvjitlink.NVJITLINK_INPUT_PTX, Data: []byte("BAD")}}, nil,
			"nvJitLinkAddData(input 0)", nvjitlink.NVJITLINK_ERROR_PTX_COMPILE, "input 0: syntax error"},
		{"undefined", []nvjitlink.Input{nvjitlink.PTX("u.ptx", []byte("UNDEFINED"))}, nil,
			"nvJitLinkComplete", nvjitlink.NVJITLINK_ERROR_PTX_COMPILE, "undefined reference in u.ptx"},
	} {
		t.Run(c.name, func(t *testing.T) {
			live := s.Stat(t, "live")
			out, err := nvjitlink.Link("sm_90", c.inputs, flags(c.opts)...)
			var le *nvjitlink.LinkError
			if out != nil || !errors.As(err, &le) || !errors.Is(err, c.result) {
				t.Fatalf("Link = %v, %v; want a LinkError matching %v", out, err, c.result)
			}
			if le.Call != c.call || !strings.Contains(le.ErrorLog, c.log) || !strings.Contains(err.Error(), c.log) {
				t.Errorf("LinkError %+v: want the call %s and the log %q", le, c.call, c.log)
			}
			if n := s.Stat(t, "live"); n != live {
				t.Errorf("%d handles live after the failed link, want %d", n, live)
			}
		})
	}
	// Failures after Complete are plain errors naming the call, and the
	// handle is destroyed too.
	for _, c := range []struct {
		fail, want string
		skip       int
	}{
		{"__nvJitLinkGetLinkedCubinSize_13_0", "nvJitLinkGetLinkedCubinSize", 0},
		{"__nvJitLinkGetLinkedCubin_13_0", "nvJitLinkGetLinkedCubin", 0},
		{"__nvJitLinkGetInfoLogSize_13_0", "reading a log's size", 0},
		{"__nvJitLinkGetInfoLog_13_0", "reading a log", 0},
		{"__nvJitLinkCreate_13_0", "nvJitLinkCreate(-arch=sm_90 -O1)", 0},
	} {
		t.Run(c.fail, func(t *testing.T) {
			live := s.Stat(t, "live")
			s.FailAfter(t, c.fail, c.skip, 1, int(nvjitlink.NVJITLINK_ERROR_INTERNAL))
			out, err := nvjitlink.Link("sm_90", []nvjitlink.Input{nvjitlink.PTX("a.ptx", []byte("p"))}, nvjitlink.Flag("-O1"))
			if out != nil || !errors.Is(err, nvjitlink.NVJITLINK_ERROR_INTERNAL) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Link = %v, %v; want NVJITLINK_ERROR_INTERNAL naming %s", out, err, c.want)
			}
			if n := s.Stat(t, "live"); n != live {
				t.Errorf("%d handles live after the failed link, want %d", n, live)
			}
		})
	}
}

// LTO-IR that the caller links without -lto gets it added: the stand-in,
// as nvJitLink, refuses LTO-IR without it. An option nvJitLink does not
// know is nvJitLinkCreate's error, naming the options.
func TestLinkErrorsOfTheOptions(t *testing.T) {
	sim(t)
	_, err := nvjitlink.Link("sm_90", []nvjitlink.Input{nvjitlink.LTOIR("k", []byte("ir"))}, nvjitlink.Flag("-frobnicate"))
	if !errors.Is(err, nvjitlink.NVJITLINK_ERROR_UNRECOGNIZED_OPTION) || !strings.Contains(err.Error(), "-arch=sm_90 -frobnicate -lto") {
		t.Errorf("an unknown option: %v", err)
	}
	for _, bad := range []string{"opt\x00", ""} {
		if _, err := nvjitlink.Link("sm_90", []nvjitlink.Input{nvjitlink.PTX("a", []byte("p"))}, nvjitlink.Flag(bad)); err == nil || !strings.Contains(err.Error(), "option") {
			t.Errorf("option %q: %v", bad, err)
		}
	}
	for _, arch := range []string{"sm_90a", "sm_100f", "sm_8"} {
		if _, err := nvjitlink.Link(arch, []nvjitlink.Input{nvjitlink.PTX("a", []byte("p"))}); err != nil {
			t.Errorf("arch %s: %v", arch, err)
		}
	}
	for _, arch := range []string{"sm_", "sm_09", "sm_90ab", "compute_90", "xsm_90"} {
		if _, err := nvjitlink.Link(arch, []nvjitlink.Input{nvjitlink.PTX("a", []byte("p"))}); err == nil {
			t.Errorf("arch %q was taken", arch)
		}
	}
}

// A failed destroy after a good link is an error joined to the result.
func TestAFailedDestroyIsAnError(t *testing.T) {
	s := sim(t)
	s.FailAfter(t, "__nvJitLinkDestroy_13_0", 0, 1, int(nvjitlink.NVJITLINK_ERROR_INTERNAL))
	_, err := nvjitlink.Link("sm_90", []nvjitlink.Input{nvjitlink.PTX("a", []byte("p"))})
	if !errors.Is(err, nvjitlink.NVJITLINK_ERROR_INTERNAL) || !strings.Contains(err.Error(), "nvJitLinkDestroy") {
		t.Errorf("Link with a failed destroy: %v", err)
	}
}

// Version is the stand-in's nvJitLinkVersion.
func TestVersionIsTheLibrarys(t *testing.T) {
	sim(t)
	if major, minor, err := nvjitlink.Version(); err != nil || major != 13 || minor != 0 {
		t.Errorf("Version() = %d, %d, %v", major, minor, err)
	}
}
