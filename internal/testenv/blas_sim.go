//go:build !gpu && (linux || windows)

package testenv

import (
	"os"
	gosync "sync"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv/cbuild"
)

// The cuBLAS stand-in (sim/cublassim.c) answers for libcublas.so.13 and
// libcublasLt.so.13 (cublas64_13.dll and cublasLt64_13.dll) in the tests
// of packages cublas and cublaslt: it is linked with the simulator the
// tests loaded, so its work runs on that simulator's streams and memory.

// MainBLAS is Main for the tests of packages built on cuBLAS: on the
// simulator it also builds (on Windows, finds) the stand-in and points
// PURECUDA_LIBCUBLAS and PURECUDA_LIBCUBLASLT at it.
func MainBLAS(m *testing.M) { mainWith(m, setupBLAS) }

// blasLibrary is the stand-in's path once set up.
var blasLibrary string

func setupBLAS() error {
	lib, err := buildBLAS(simLibrary)
	if err != nil {
		return err
	}
	for _, env := range []string{"PURECUDA_LIBCUBLAS", "PURECUDA_LIBCUBLASLT"} {
		if err := os.Setenv(env, lib); err != nil {
			return err
		}
	}
	blasLibrary = lib
	return nil
}

// BLASLibrary is the path of the cuBLAS stand-in.
func BLASLibrary() string { return blasLibrary }

var blasHooks struct {
	once gosync.Once
	err  error
	stat func(name string) int64
	live func(handle uintptr) int32
}

func loadBLASHooks(t testing.TB) {
	t.Helper()
	blasHooks.once.Do(func() {
		blasHooks.err = cbuild.Bind(blasLibrary, cbuild.Hook{Name: "cublassim_stat", Fn: &blasHooks.stat},
			cbuild.Hook{Name: "cublassim_live", Fn: &blasHooks.live})
	})
	if blasHooks.err != nil {
		t.Fatalf("the cuBLAS stand-in's hooks: %v", blasHooks.err)
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
