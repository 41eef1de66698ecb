//go:build !gpu

package testenv

import (
	"testing"
)

// The cuBLAS stand-in (sim/cublassim.c) answers for libcublas.so.13 and
// libcublasLt.so.13 (cublas64_13.dll and cublasLt64_13.dll) in the tests
// of packages cublas and cublaslt: it is linked with the simulator the
// tests loaded, so its work runs on that simulator's streams and memory.

// MainBLAS is Main for the tests of packages built on cuBLAS: on the
// simulator it also builds (on Windows, finds: $PURECUDA_CUBLASSIM_DLL)
// the stand-in and points PURECUDA_LIBCUBLAS and PURECUDA_LIBCUBLASLT at
// it; the leak check counts its live handles too.
func MainBLAS(m *testing.M, opts ...Option) { mainWith(m, setupBLAS, opts) }

// blasLibrary is the stand-in's path once set up.
var blasLibrary string

var blasHooks struct {
	stat func(name string) int64
	live func(handle uintptr) int32
}

func setupBLAS() error {
	lib, err := LoadStub(Stub{
		Name:    "cublassim",
		Sources: []string{"cublassim.c"},
		Links:   []string{simLibrary, "m"},
		Env:     []string{"PURECUDA_LIBCUBLAS", "PURECUDA_LIBCUBLASLT"},
		Hooks:   []Hook{{Name: "cublassim_stat", Fn: &blasHooks.stat}, {Name: "cublassim_live", Fn: &blasHooks.live}},
		Stat:    "cublassim_stat",
		Live:    map[string]string{"cuBLAS and cuBLASLt handles": "live_handles"},
	})
	if err != nil {
		return err
	}
	blasLibrary = lib
	return nil
}

// BLASLibrary is the path of the cuBLAS stand-in.
func BLASLibrary() string { return blasLibrary }

func loadBLASHooks(t testing.TB) {
	t.Helper()
	if blasLibrary == "" {
		t.Fatal("the cuBLAS stand-in's hooks: the stand-in is not loaded (testenv.MainBLAS loads it)")
	}
}

// BLASLive says whether a handle of the cuBLAS stand-in (cublasHandle_t
// or cublasLtHandle_t) is live: made and not destroyed.
func BLASLive(t testing.TB, handle uintptr) bool {
	t.Helper()
	loadBLASHooks(t)
	return blasHooks.live(handle) != 0
}

// BLASStat reads a counter of the cuBLAS stand-in (see cublassim.c:
// live_handles, creates, destroys, calls, heuristics, set_workspace,
// set_stream).
func BLASStat(t testing.TB, name string) int64 {
	t.Helper()
	loadBLASHooks(t)
	v := blasHooks.stat(name)
	if v < 0 {
		t.Fatalf("the cuBLAS stand-in has no counter %q", name)
	}
	return v
}
