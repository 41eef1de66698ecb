//go:build !gpu && windows

package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"github.com/ebitengine/purego"
)

// EnvSimDLL names the environment variable that gives the path of the
// simulator built as a Windows DLL (sim.c compiled with mingw-w64, as
// .ci/windows-wine does). Windows has no C compiler to count on, so the
// tests do not build it themselves.
const EnvSimDLL = "PURECUDA_SIM_DLL"

// buildSimulator returns the absolute path of the simulator DLL named by
// $PURECUDA_SIM_DLL.
func buildSimulator() (string, error) {
	p := os.Getenv(EnvSimDLL)
	if p == "" {
		return "", errors.New(EnvSimDLL + " is not set (on Windows the simulator is a DLL built from sim.c with mingw-w64, see .ci/windows-wine)")
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

// openHooks finds the simulator's test hooks in the DLL, which libcuda has
// already loaded (LoadLibrary returns the same module).
func openHooks(lib string, failAfter *func(string, int32, int32, int32) int32, stat *func(string) int64) error {
	h, err := syscall.LoadLibrary(lib)
	if err != nil {
		return err
	}
	for _, name := range []string{"sim_fail_after", "sim_stat"} {
		if _, err := syscall.GetProcAddress(h, name); err != nil {
			return errors.New(lib + ": no " + name)
		}
	}
	purego.RegisterLibFunc(failAfter, uintptr(h), "sim_fail_after")
	purego.RegisterLibFunc(stat, uintptr(h), "sim_stat")
	return nil
}
