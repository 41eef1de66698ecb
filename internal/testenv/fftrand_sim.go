//go:build !gpu && (linux || windows)

package testenv

import (
	"testing"
)

// The cuRAND and cuFFT stand-in (sim/fftrandsim.c) answers for
// libcurand.so.10 and libcufft.so.12 (curand64_10.dll, cufft64_12.dll) in
// the tests of packages curand and cufft, linked with the simulator the
// tests loaded, as the cuBLAS stand-in is. On Windows it is the DLL that
// PURECUDA_FFTRANDSIM_DLL names (.ci/windows-wine).

// MainFFTRand is Main for the tests of packages curand and cufft: on the
// simulator it also builds (on Windows, finds) the stand-in and points
// PURECUDA_LIBCURAND and PURECUDA_LIBCUFFT at it; the leak check counts
// its live generators and plans too.
func MainFFTRand(m *testing.M, opts ...Option) { mainWith(m, setupFFTRand, opts) }

var fftRandLibrary string

var fftRandHooks struct {
	stat     func(name string) int64
	genLive  func(g uintptr) int32
	planLive func(plan int32) int32
}

func setupFFTRand() error {
	lib, err := LoadStub(Stub{
		Name:    "fftrandsim",
		Sources: []string{"fftrandsim.c"},
		Links:   []string{simLibrary, "m"},
		Env:     []string{"PURECUDA_LIBCURAND", "PURECUDA_LIBCUFFT"},
		Hooks: []Hook{{Name: "fftrandsim_stat", Fn: &fftRandHooks.stat},
			{Name: "fftrandsim_generator_live", Fn: &fftRandHooks.genLive},
			{Name: "fftrandsim_plan_live", Fn: &fftRandHooks.planLive}},
		Stat: "fftrandsim_stat",
		Live: map[string]string{"cuRAND generators": "generators", "cuFFT plans": "plans"},
	})
	if err != nil {
		return err
	}
	fftRandLibrary = lib
	return nil
}

func loadedFFTRand(t testing.TB) {
	t.Helper()
	if fftRandLibrary == "" {
		t.Fatal("the cuRAND/cuFFT stand-in is not loaded (testenv.MainFFTRand loads it)")
	}
}

// GeneratorLive says whether a generator of the stand-in (curandGenerator_t)
// is live: made and not destroyed.
func GeneratorLive(t testing.TB, g uintptr) bool {
	t.Helper()
	loadedFFTRand(t)
	return fftRandHooks.genLive(g) != 0
}

// PlanLive says whether a plan of the stand-in (cufftHandle) is live.
func PlanLive(t testing.TB, plan int32) bool {
	t.Helper()
	loadedFFTRand(t)
	return fftRandHooks.planLive(plan) != 0
}

// FFTRandStat reads a counter of the cuRAND and cuFFT stand-in (see
// fftrandsim.c: generators, plans, calls, work_area, auto_allocation,
// exec_without_work_area).
func FFTRandStat(t testing.TB, name string) int64 {
	t.Helper()
	loadedFFTRand(t)
	v := fftRandHooks.stat(name)
	if v < 0 {
		t.Fatalf("the cuRAND/cuFFT stand-in has no counter %q", name)
	}
	return v
}
