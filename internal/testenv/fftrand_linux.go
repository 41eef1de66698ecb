//go:build !gpu

package testenv

import (
	_ "embed"
	"path/filepath"

	"github.com/purecuda/purecuda/internal/testenv/cbuild"
)

// buildFFTRand compiles fftrandsim.c against the simulator at sim, as
// buildBLAS does cublassim.c.
func buildFFTRand(sim string) (string, error) {
	return cbuild.Build(cbuild.Source{Name: "fftrandsim.c", Text: fftRandSource, Lib: "libfftrandsim.so",
		Dir: filepath.Dir(sim), Key: sim, Args: []string{sim, "-lm"}})
}

//go:embed sim/fftrandsim.c
var fftRandSource []byte
