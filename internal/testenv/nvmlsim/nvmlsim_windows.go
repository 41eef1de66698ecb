//go:build !gpu && windows

package nvmlsim

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"github.com/ebitengine/purego"
)

// EnvDLL names the environment variable that gives the path of the NVML
// simulator built as a Windows DLL (nvmlsim.c compiled with mingw-w64, as
// .ci/windows-wine does).
const EnvDLL = "PURECUDA_NVMLSIM_DLL"

// library returns the absolute path of the DLL that $PURECUDA_NVMLSIM_DLL
// names.
func library() (string, error) {
	p := os.Getenv(EnvDLL)
	if p == "" {
		return "", errors.New(EnvDLL + " is not set (on Windows the NVML simulator is a DLL built from nvmlsim.c with mingw-w64, see .ci/windows-wine)")
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", err
	}
	return abs, nil
}

func openHooks(lib string, h *hooks) error {
	handle, err := syscall.LoadLibrary(lib)
	if err != nil {
		return err
	}
	for _, name := range []string{"nvmlsim_post_event", "nvmlsim_set_processes", "nvmlsim_stat"} {
		if _, err := syscall.GetProcAddress(handle, name); err != nil {
			return errors.New(lib + ": no " + name)
		}
	}
	purego.RegisterLibFunc(&h.postEvent, uintptr(handle), "nvmlsim_post_event")
	purego.RegisterLibFunc(&h.setProcesses, uintptr(handle), "nvmlsim_set_processes")
	purego.RegisterLibFunc(&h.stat, uintptr(handle), "nvmlsim_stat")
	return nil
}
