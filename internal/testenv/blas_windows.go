//go:build !gpu && windows

package testenv

import "github.com/purecuda/purecuda/internal/testenv/cbuild"

// EnvBLASDLL names the environment variable that gives the path of the
// cuBLAS stand-in built as a Windows DLL (cublassim.c compiled with
// mingw-w64 against the simulator DLL, as .ci/windows-wine does).
const EnvBLASDLL = "PURECUDA_BLASSIM_DLL"

// buildBLAS returns the absolute path of the stand-in DLL that
// $PURECUDA_BLASSIM_DLL names (built against the simulator DLL).
func buildBLAS(string) (string, error) {
	return cbuild.DLL(EnvBLASDLL, "the cuBLAS stand-in, cublassim.c,")
}
