package cbuild

import (
	"errors"
	"runtime"
	"syscall"

	"github.com/ebitengine/purego"
)

// Build fails: on Windows the stand-ins are DLLs built beforehand (DLL).
func Build(s Source) (string, error) {
	return "", errors.New("the C stand-ins are not built on " + runtime.GOOS + " (see DLL)")
}

// buildStub is BuildStub on Windows: the DLL that the environment variable
// PURECUDA_<NAME>_DLL names (.ci/windows-wine builds it).
func buildStub(name string, _ []file, _ []string) (string, error) {
	return DLL(DLLEnv(name), "the stand-in "+name)
}

// Bind opens the DLL lib (the stand-in that a package already loaded:
// LoadLibrary returns the same module) and binds each hook; a hook lib
// lacks is an error.
func Bind(lib string, hooks ...Hook) error {
	h, err := syscall.LoadLibrary(lib)
	if err != nil {
		return err
	}
	for _, k := range hooks {
		if _, err := syscall.GetProcAddress(h, k.Name); err != nil {
			return errors.New(lib + ": no " + k.Name)
		}
	}
	for _, k := range hooks {
		purego.RegisterLibFunc(k.Fn, uintptr(h), k.Name)
	}
	return nil
}
