//go:build linux && amd64 && !gpu

package libcuda

import (
	"os"
	"testing"

	"github.com/purecuda/purecuda/internal/layoutcheck"
)

// envWineLayout, set to 1, runs TestLayoutMatchesCOnWindows; .ci/windows-wine
// sets it, with WINEPREFIX pointing at its prefix.
const envWineLayout = "PURECUDA_WINE_LAYOUT"

// TestLayoutMatchesCOnWindows is TestLayoutMatchesC for windows/amd64: the
// layout program is compiled from cuda.h by mingw-w64 (LLP64: long is 32
// bits, and MSVC's rules for bit-fields and packing) and run under Wine.
// The Go side is this binary's numbers: gc lays out types by GOARCH alone,
// so linux/amd64's sizes, alignments and offsets are windows/amd64's.
func TestLayoutMatchesCOnWindows(t *testing.T) {
	if os.Getenv(envWineLayout) != "1" {
		t.Skip(envWineLayout + "=1 runs it (needs x86_64-w64-mingw32-gcc and wine; see .ci/windows-wine)")
	}
	layoutcheck.Check(t, layoutcheck.Program{
		Header:   "cuda.h",
		Version:  "CUDA_VERSION",
		Want:     CUDA_VERSION,
		Required: true,
		Cross: &layoutcheck.Cross{
			CC: "x86_64-w64-mingw32-gcc",
			// The ANSI stdio of mingw-w64 knows %zu, which msvcrt's printf may not.
			Flags:  []string{"-D__USE_MINGW_ANSI_STDIO=1"},
			Exe:    ".exe",
			Runner: []string{"wine"},
			Env:    []string{"WINEDEBUG=-all"},
		},
	}, layoutTypes[:])
}
