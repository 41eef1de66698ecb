//go:build !gpu && windows

package testenv

import "github.com/purecuda/purecuda/internal/testenv/cbuild"

// EnvSimDLL names the environment variable that gives the path of the
// simulator built as a Windows DLL (sim.c compiled with mingw-w64, as
// .ci/windows-wine does). Windows has no C compiler to count on, so the
// tests do not build it themselves.
const EnvSimDLL = "PURECUDA_SIM_DLL"

// buildSimulator returns the absolute path of the simulator DLL named by
// $PURECUDA_SIM_DLL.
func buildSimulator() (string, error) { return cbuild.DLL(EnvSimDLL, "the simulator, sim.c,") }
