//go:build !gpu && !linux && !windows

package testenv

import "testing"

// BLASFailNext fails t: there is no cuBLAS stand-in on this system.
func BLASFailNext(t testing.TB, name string, count int, status int) {
	t.Helper()
	t.Fatalf("the cuBLAS stand-in's failure of %s: no stand-in on this system", name)
}
