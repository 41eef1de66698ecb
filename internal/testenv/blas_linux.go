//go:build !gpu

package testenv

import (
	"path/filepath"

	_ "embed"

	"github.com/purecuda/purecuda/internal/testenv/cbuild"
)

// buildBLAS compiles cublassim.c against the simulator at sim into the
// simulator's cache folder. It is linked by the simulator's path (the
// simulator has no soname): the dynamic loader finds the copy the tests
// loaded already, so both share one state.
func buildBLAS(sim string) (string, error) {
	return cbuild.Build(cbuild.Source{Name: "cublassim.c", Text: blasSource, Lib: "libcublassim.so",
		Dir: filepath.Dir(sim), Key: sim, Args: []string{sim, "-lm"}})
}

// blasSource is the stand-in, sim/cublassim.c.
//
//go:embed sim/cublassim.c
var blasSource []byte
