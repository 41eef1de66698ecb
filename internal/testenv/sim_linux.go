//go:build !gpu

package testenv

import (
	_ "embed"

	"github.com/purecuda/purecuda/internal/testenv/cbuild"
)

// buildSimulator compiles sim.c into a shared library in the user's cache
// directory (see cbuild.Build) and returns its path.
func buildSimulator() (string, error) {
	return cbuild.Build(cbuild.Source{Name: "sim.c", Text: simSource, Lib: "libcudasim.so"})
}

// simSource is the simulator, sim.c.
//
//go:embed sim/sim.c
var simSource []byte
