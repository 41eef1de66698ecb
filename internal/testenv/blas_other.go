//go:build !gpu && !linux && !windows

package testenv

import (
	"errors"
	"testing"
)

// MainBLAS is Main for the tests of packages built on cuBLAS. The cuBLAS
// stand-in is built on Linux only: elsewhere the simulator's tests run
// without it.
func MainBLAS(m *testing.M) { mainWith(m, setupBLAS) }

func setupBLAS() error { return errors.New("the cuBLAS stand-in is built on Linux only") }

// BLASStat fails t: there is no stand-in on this system.
func BLASStat(t testing.TB, name string) int64 {
	t.Helper()
	t.Fatalf("the cuBLAS stand-in's counter %s: no stand-in on this system", name)
	return 0
}

// BLASLive says whether a handle of the cuBLAS stand-in is live: there is
// no stand-in here, and it fails t.
func BLASLive(t testing.TB, handle uintptr) bool {
	t.Helper()
	t.Fatalf("the cuBLAS stand-in's handle %#x: %s", handle, "no stand-in on this system")
	return false
}
