//go:build !gpu && linux

package nvmlsim

import (
	_ "embed"

	"github.com/purecuda/purecuda/internal/testenv/cbuild"
)

// source is the simulator, nvmlsim.c.
//
//go:embed sim/nvmlsim.c
var source []byte

// library compiles nvmlsim.c into a shared library in the user's cache
// directory (see cbuild.Build) and returns its path.
func library() (string, error) {
	return cbuild.Build(cbuild.Source{Name: "nvmlsim.c", Text: source, Lib: "libnvmlsim.so"})
}
