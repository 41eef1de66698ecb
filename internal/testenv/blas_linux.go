//go:build !gpu

package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	gosync "sync"
	"testing"

	_ "embed"

	"github.com/ebitengine/purego"
)

// The cuBLAS stand-in (sim/cublassim.c) answers for libcublas.so.13 and
// libcublasLt.so.13 in the tests of packages cublas and cublaslt: it is
// linked with the simulator the tests loaded, so its work runs on that
// simulator's streams and memory.

// MainBLAS is Main for the tests of packages built on cuBLAS: on the
// simulator it also builds the stand-in and points PURECUDA_LIBCUBLAS and
// PURECUDA_LIBCUBLASLT at it.
func MainBLAS(m *testing.M) { mainWith(m, setupBLAS) }

// blasLibrary is the stand-in's path once built.
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

// buildBLAS compiles cublassim.c against the simulator at sim into the
// simulator's cache folder.
func buildBLAS(sim string) (string, error) {
	cc := findCompiler()
	if cc == "" {
		return "", errors.New("no C compiler (cc)")
	}
	sum := sha256.Sum256(append([]byte(cc+"\x00"+sim+"\x00"), blasSource...))
	dir := filepath.Join(filepath.Dir(sim), "blas-"+hex.EncodeToString(sum[:8]))
	// Linked by the simulator's path (it has no soname): the dynamic loader
	// finds the copy the tests loaded already, so both share one state.
	return buildCached(cc, dir, "libcublassim.so", "cublassim.c", blasSource, sim, "-lm")
}

var blasHooks struct {
	once gosync.Once
	err  error
	stat func(name string) int64
	live func(handle uintptr) int32
}

func loadBLASHooks(t testing.TB) {
	t.Helper()
	blasHooks.once.Do(func() {
		h, err := purego.Dlopen(blasLibrary, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			blasHooks.err = err
			return
		}
		purego.RegisterLibFunc(&blasHooks.stat, h, "cublassim_stat")
		purego.RegisterLibFunc(&blasHooks.live, h, "cublassim_live")
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

// blasSource is the stand-in, sim/cublassim.c.
//
//go:embed sim/cublassim.c
var blasSource []byte
