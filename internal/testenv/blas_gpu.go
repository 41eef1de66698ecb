//go:build gpu

package testenv

import "testing"

// MainBLAS is Main for the tests of packages built on cuBLAS; under -tags
// gpu they use the real libraries, found as packages cublas and cublaslt
// look for them.
func MainBLAS(m *testing.M, opts ...Option) { mainWith(m, nil, opts) }

// BLASStat reads a counter of the cuBLAS stand-in: under -tags gpu there
// is none, and it fails t.
func BLASStat(t testing.TB, name string) int64 {
	t.Helper()
	t.Fatalf("the cuBLAS stand-in's counter %s: not on the GPU", name)
	return 0
}

// BLASLive says whether a handle of the cuBLAS stand-in is live: there is
// no stand-in here, and it fails t.
func BLASLive(t testing.TB, handle uintptr) bool {
	t.Helper()
	t.Fatalf("the cuBLAS stand-in's handle %#x: %s", handle, "not on the GPU")
	return false
}
