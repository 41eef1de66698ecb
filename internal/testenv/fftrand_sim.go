//go:build !gpu && (linux || windows)

package testenv

import (
	"os"
	gosync "sync"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv/cbuild"
)

// The cuRAND and cuFFT stand-in (sim/fftrandsim.c) answers for
// libcurand.so.10 and libcufft.so.12 (curand64_10.dll, cufft64_12.dll) in
// the tests of packages curand and cufft, linked with the simulator the
// tests loaded, as the cuBLAS stand-in is.

// MainFFTRand is Main for the tests of packages curand and cufft: on the
// simulator it also builds (on Windows, finds) the stand-in and points
// PURECUDA_LIBCURAND and PURECUDA_LIBCUFFT at it.
func MainFFTRand(m *testing.M) { mainWith(m, setupFFTRand) }

var fftRandLibrary string

func setupFFTRand() error {
	lib, err := buildFFTRand(simLibrary)
	if err != nil {
		return err
	}
	for _, env := range []string{"PURECUDA_LIBCURAND", "PURECUDA_LIBCUFFT"} {
		if err := os.Setenv(env, lib); err != nil {
			return err
		}
	}
	fftRandLibrary = lib
	return nil
}

var fftRandHooks struct {
	once     gosync.Once
	err      error
	stat     func(name string) int64
	genLive  func(g uintptr) int32
	planLive func(plan int32) int32
}

func loadFFTRandHooks(t testing.TB) {
	t.Helper()
	fftRandHooks.once.Do(func() {
		fftRandHooks.err = cbuild.Bind(fftRandLibrary, cbuild.Hook{Name: "fftrandsim_stat", Fn: &fftRandHooks.stat},
			cbuild.Hook{Name: "fftrandsim_generator_live", Fn: &fftRandHooks.genLive},
			cbuild.Hook{Name: "fftrandsim_plan_live", Fn: &fftRandHooks.planLive})
	})
	if fftRandHooks.err != nil {
		t.Fatalf("the cuRAND/cuFFT stand-in's hooks: %v", fftRandHooks.err)
	}
}

// GeneratorLive says whether a generator of the stand-in (curandGenerator_t)
// is live: made and not destroyed.
func GeneratorLive(t testing.TB, g uintptr) bool {
	t.Helper()
	loadFFTRandHooks(t)
	return fftRandHooks.genLive(g) != 0
}

// PlanLive says whether a plan of the stand-in (cufftHandle) is live.
func PlanLive(t testing.TB, plan int32) bool {
	t.Helper()
	loadFFTRandHooks(t)
	return fftRandHooks.planLive(plan) != 0
}

// FFTRandStat reads a counter of the cuRAND and cuFFT stand-in (see
// fftrandsim.c: generators, plans, calls, work_area, auto_allocation,
// exec_without_work_area).
func FFTRandStat(t testing.TB, name string) int64 {
	t.Helper()
	loadFFTRandHooks(t)
	v := fftRandHooks.stat(name)
	if v < 0 {
		t.Fatalf("the cuRAND/cuFFT stand-in has no counter %q", name)
	}
	return v
}
