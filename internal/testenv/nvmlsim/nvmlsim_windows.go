//go:build !gpu && windows

package nvmlsim

import "github.com/purecuda/purecuda/internal/testenv/cbuild"

// EnvDLL names the environment variable that gives the path of the NVML
// simulator built as a Windows DLL (nvmlsim.c compiled with mingw-w64, as
// .ci/windows-wine does).
const EnvDLL = "PURECUDA_NVMLSIM_DLL"

// library returns the absolute path of the DLL that $PURECUDA_NVMLSIM_DLL
// names.
func library() (string, error) {
	return cbuild.DLL(EnvDLL, "the NVML simulator, nvmlsim.c,")
}
