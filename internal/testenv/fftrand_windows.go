//go:build !gpu

package testenv

import "github.com/purecuda/purecuda/internal/testenv/cbuild"

// EnvFFTRandDLL names the variable that gives the cuRAND and cuFFT
// stand-in built as a DLL against the simulator DLL (.ci/windows-wine).
const EnvFFTRandDLL = "PURECUDA_FFTRANDSIM_DLL"

func buildFFTRand(string) (string, error) {
	return cbuild.DLL(EnvFFTRandDLL, "the cuRAND and cuFFT stand-in, fftrandsim.c,")
}
