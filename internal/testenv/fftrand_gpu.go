//go:build gpu

package testenv

import "testing"

// MainFFTRand is Main for the tests of packages curand and cufft; under
// -tags gpu they use the real libraries.
func MainFFTRand(m *testing.M, opts ...Option) { mainWith(m, nil, opts) }

// FFTRandStat fails t: there is no stand-in on the GPU.
func FFTRandStat(t testing.TB, name string) int64 {
	t.Helper()
	t.Fatalf("the cuRAND/cuFFT stand-in's counter %s: not on the GPU", name)
	return 0
}

// GeneratorLive fails t: there is no stand-in on the GPU.
func GeneratorLive(t testing.TB, g uintptr) bool {
	t.Helper()
	t.Fatalf("the cuRAND stand-in's generator %#x: not on the GPU", g)
	return false
}

// PlanLive fails t: there is no stand-in on the GPU.
func PlanLive(t testing.TB, plan int32) bool {
	t.Helper()
	t.Fatalf("the cuFFT stand-in's plan %d: not on the GPU", plan)
	return false
}
