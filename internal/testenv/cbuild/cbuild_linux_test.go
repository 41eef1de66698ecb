package cbuild

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/purecuda/purecuda/internal/testenv/harness"
)

// A stand-in of two C files and a header, linked with libm, builds once
// (the second build is the cached library), loads, and its hooks, its
// variables and its live count are set up.
func TestLoadStubBuildsBindsAndWatches(t *testing.T) {
	if compiler() == "" {
		if os.Getenv("PURECUDA_REQUIRE_SIM") == "1" {
			t.Fatal("no C compiler")
		}
		t.Skip("no C compiler to build a stand-in with")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // a cache of the test's own
	fsys := fstest.MapFS{
		"stub/two.h": {Data: []byte("long long twice(long long);\n")},
		"stub/a.c": {Data: []byte(`#include <math.h>
#include "two.h"
static long long live = 3;
long long stubtest_stat(const char *name) { return name[0] == 'l' ? live : -1; }
long long stubtest_root(long long x) { return twice((long long)sqrt((double)x)); }
`)},
		"stub/b.c": {Data: []byte("#include \"two.h\"\nlong long twice(long long x) { return 2 * x; }\n")},
	}
	var root func(int64) int64
	const env = "PURECUDA_TEST_STUBTEST"
	t.Setenv(env, "")
	lib, err := LoadStub(fsys, Stub{
		Name:    "stubtest",
		Sources: []string{"stub/a.c", "stub/b.c", "stub/two.h"},
		Links:   []string{"m"},
		Env:     []string{env},
		Hooks:   []Hook{{Name: "stubtest_root", Fn: &root}},
		Stat:    "stubtest_stat",
		Live:    map[string]string{"stub widgets": "live"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(lib, "/libstubtest.so") || os.Getenv(env) != lib {
		t.Fatalf("library %s, $%s = %q; want lib<name>.so, named by the variable", lib, env, os.Getenv(env))
	}
	if got := root(49); got != 14 {
		t.Fatalf("stubtest_root(49) = %d, want 14", got)
	}
	if err := harness.Check(0); err == nil || !strings.Contains(err.Error(), "3 stub widgets live") {
		t.Fatalf("the stand-in's live count is not watched: %v", err)
	}
	harness.Allow("stub widgets", 3, "this test's stand-in counts 3")
	again, err := BuildStub(fsys, "stubtest", []string{"stub/a.c", "stub/b.c", "stub/two.h"}, "m")
	if err != nil || again != lib {
		t.Fatalf("the second build: %s, %v; want the cached %s", again, err, lib)
	}
	if other, err := BuildStub(fsys, "stubtest", []string{"stub/a.c", "stub/b.c", "stub/two.h"}); err != nil || other == lib {
		t.Fatalf("a build with other links: %s, %v; want another library than %s", other, err, lib)
	}
}

func TestDLLEnv(t *testing.T) {
	if got := DLLEnv("cublassim"); got != "PURECUDA_CUBLASSIM_DLL" {
		t.Fatalf("DLLEnv(cublassim) = %s", got)
	}
}
