//go:build !gpu && !linux && !windows

package testenv

import (
	"errors"
	"testing"
)

// MainFFTRand is Main for the tests of packages curand and cufft; the
// stand-in is built on Linux and Windows only.
func MainFFTRand(m *testing.M, opts ...Option) { mainWith(m, setupFFTRand, opts) }

func setupFFTRand() error {
	return errors.New("the cuRAND/cuFFT stand-in is built on Linux and Windows only")
}

// FFTRandStat fails t: there is no stand-in on this system.
func FFTRandStat(t testing.TB, name string) int64 {
	t.Helper()
	t.Fatalf("the cuRAND/cuFFT stand-in's counter %s: no stand-in on this system", name)
	return 0
}

// GeneratorLive fails t: there is no stand-in on this system.
func GeneratorLive(t testing.TB, g uintptr) bool {
	t.Helper()
	t.Fatalf("the cuRAND stand-in's generator %#x: no stand-in on this system", g)
	return false
}

// PlanLive fails t: there is no stand-in on this system.
func PlanLive(t testing.TB, plan int32) bool {
	t.Helper()
	t.Fatalf("the cuFFT stand-in's plan %d: no stand-in on this system", plan)
	return false
}
