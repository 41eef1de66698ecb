//go:build !gpu && (linux || windows)

package testenv

import (
	gosync "sync"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv/cbuild"
)

var blasFail struct {
	once gosync.Once
	err  error
	next func(name string, count, status int32) int32
}

// BLASFailNext makes the next count calls of the cuBLAS or cuBLASLt entry
// point named (its C symbol, e.g. "cublasSetStream_v2") fail in the
// stand-in with status, a cublasStatus_t; the failures left are cleared
// when the test ends.
func BLASFailNext(t testing.TB, name string, count int, status int) {
	t.Helper()
	blasFail.once.Do(func() {
		blasFail.err = cbuild.Bind(blasLibrary, cbuild.Hook{Name: "cublassim_fail_next", Fn: &blasFail.next})
	})
	if blasFail.err != nil {
		t.Fatalf("the cuBLAS stand-in's hooks: %v", blasFail.err)
	}
	if blasFail.next(name, int32(count), int32(status)) != 0 {
		t.Fatalf("the cuBLAS stand-in has no room for another failure of %s", name)
	}
	t.Cleanup(func() { blasFail.next(name, 0, 0) })
}
