//go:build gpu

package testenv

import "testing"

// MainFFTRand is Main for the tests of packages curand and cufft; under
// -tags gpu they use the real libraries.
func MainFFTRand(m *testing.M) { mainWith(m, nil) }

// FFTRandStat fails t: there is no stand-in on the GPU.
func FFTRandStat(t testing.TB, name string) int64 {
	t.Helper()
	t.Fatalf("the cuRAND/cuFFT stand-in's counter %s: not on the GPU", name)
	return 0
}
