//go:build !gpu && windows

package testenv

import (
	"errors"
	"os"
	"path/filepath"
	gosync "sync"
	"syscall"
	"testing"

	"github.com/ebitengine/purego"
)

// EnvBLASDLL names the environment variable that gives the path of the
// cuBLAS stand-in built as a Windows DLL (cublassim.c compiled with
// mingw-w64 against the simulator DLL, as .ci/windows-wine does).
const EnvBLASDLL = "PURECUDA_BLASSIM_DLL"

// MainBLAS is Main for the tests of packages built on cuBLAS: on the
// simulator it also points PURECUDA_LIBCUBLAS and PURECUDA_LIBCUBLASLT at
// the stand-in DLL that $PURECUDA_BLASSIM_DLL names.
func MainBLAS(m *testing.M) { mainWith(m, setupBLAS) }

var blasLibrary string

func setupBLAS() error {
	p := os.Getenv(EnvBLASDLL)
	if p == "" {
		return errors.New(EnvBLASDLL + " is not set (on Windows the cuBLAS stand-in is a DLL built from cublassim.c with mingw-w64, see .ci/windows-wine)")
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return err
	}
	if _, err := os.Stat(abs); err != nil {
		return err
	}
	for _, env := range []string{"PURECUDA_LIBCUBLAS", "PURECUDA_LIBCUBLASLT"} {
		if err := os.Setenv(env, abs); err != nil {
			return err
		}
	}
	blasLibrary = abs
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
		h, err := syscall.LoadLibrary(blasLibrary)
		if err != nil {
			blasHooks.err = err
			return
		}
		purego.RegisterLibFunc(&blasHooks.stat, uintptr(h), "cublassim_stat")
		purego.RegisterLibFunc(&blasHooks.live, uintptr(h), "cublassim_live")
	})
	if blasHooks.err != nil {
		t.Fatalf("the cuBLAS stand-in's hooks: %v", blasHooks.err)
	}
}

// BLASStat reads a counter of the cuBLAS stand-in (see cublassim.c).
func BLASStat(t testing.TB, name string) int64 {
	t.Helper()
	loadBLASHooks(t)
	v := blasHooks.stat(name)
	if v < 0 {
		t.Fatalf("the cuBLAS stand-in has no counter %q", name)
	}
	return v
}

// BLASLive says whether a handle of the cuBLAS stand-in is live.
func BLASLive(t testing.TB, handle uintptr) bool {
	t.Helper()
	loadBLASHooks(t)
	return blasHooks.live(handle) != 0
}
