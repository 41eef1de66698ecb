//go:build !gpu && linux

package testenv

import (
	_ "embed"
	"os"
	gosync "sync"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv/cbuild"
)

// The nvJitLink stand-in (sim/nvjitlinksim.c) answers for
// libnvJitLink.so.13 in package nvjitlink's tests on Linux: it records the
// options and inputs of a link and "links" them into a cubin that names
// them, with nvJitLink's result codes and logs.

//go:embed sim/nvjitlinksim.c
var jitLinkSource []byte

// JitLinkSim is the nvJitLink stand-in, loaded.
type JitLinkSim struct {
	Path     string // the library
	stat     func(name string) int64
	failNext func(name string, skip, count, result int32) int32
	last     func(buf *byte, n int32) int32
}

var jitLink struct {
	once gosync.Once
	sim  *JitLinkSim
	err  error
}

// NewJitLinkSim builds the stand-in (once per source, in the user's cache)
// and points PURECUDA_LIBNVJITLINK at it; the caller then loads it
// (nvjitlink.Load tries again after a failed load).
func NewJitLinkSim(t testing.TB) *JitLinkSim {
	t.Helper()
	jitLink.once.Do(func() {
		s := &JitLinkSim{}
		s.Path, jitLink.err = cbuild.Build(cbuild.Source{Name: "nvjitlinksim.c", Text: jitLinkSource, Lib: "libnvjitlinksim.so"})
		if jitLink.err != nil {
			return
		}
		if jitLink.err = os.Setenv("PURECUDA_LIBNVJITLINK", s.Path); jitLink.err != nil {
			return
		}
		jitLink.err = cbuild.Bind(s.Path, cbuild.Hook{Name: "nvjitlinksim_stat", Fn: &s.stat},
			cbuild.Hook{Name: "nvjitlinksim_fail_next", Fn: &s.failNext},
			cbuild.Hook{Name: "nvjitlinksim_last", Fn: &s.last})
		jitLink.sim = s
	})
	if jitLink.err != nil {
		t.Fatalf("the nvJitLink stand-in: %v", jitLink.err)
	}
	return jitLink.sim
}

// Stat reads a counter of the stand-in: "live" (handles not destroyed),
// "creates", "destroys".
func (s *JitLinkSim) Stat(t testing.TB, name string) int64 {
	t.Helper()
	v := s.stat(name)
	if v < 0 {
		t.Fatalf("the nvJitLink stand-in has no counter %q", name)
	}
	return v
}

// FailAfter makes the entry point named (its C symbol, e.g.
// "__nvJitLinkComplete_13_0") fail with result for count calls after skip
// calls that pass; what is left is cleared when the test ends.
func (s *JitLinkSim) FailAfter(t testing.TB, name string, skip, count, result int) {
	t.Helper()
	if s.failNext(name, int32(skip), int32(count), int32(result)) != 0 {
		t.Fatalf("the nvJitLink stand-in has no room for another failure of %s", name)
	}
	t.Cleanup(func() { s.failNext(name, 0, 0, 0) })
}

// Last is what the stand-in was given last: the last Create's options and
// the inputs added since, one a line ("opt -arch=sm_90", "input 3 k.ltoir
// 12": type, name, size).
func (s *JitLinkSim) Last(t testing.TB) string {
	t.Helper()
	buf := make([]byte, 1<<16)
	n := s.last(&buf[0], int32(len(buf)))
	if n < 0 {
		t.Fatal("the nvJitLink stand-in's record does not fit")
	}
	return string(buf[:n])
}
