// Package cbuild builds the C stand-ins that the tests load in place of
// NVIDIA's libraries (the driver simulator, the NVML simulator, the cuBLAS
// stand-in) and binds their test hooks. On Linux it compiles a source with
// the system C compiler, once per compiler and source, into the user's
// cache directory; on Windows, which has no C compiler to count on, the
// stand-ins are DLLs built by .ci/windows-wine with mingw-w64 and named by
// environment variables (DLL).
//
// It imports no package of the module, so that internal/testenv (which
// stands on libcuda) and internal/testenv/nvmlsim (which must not) share it.
package cbuild

import (
	"errors"
	"os"
	"path/filepath"
)

// Source is a C stand-in to build.
type Source struct {
	Name string   // the C file's name, e.g. "sim.c"; its stem names the cache folder
	Text []byte   // the C source
	Lib  string   // the shared library's file name, e.g. "libcudasim.so"
	Dir  string   // the folder that holds the cache folder; "" is <user cache>/purecuda
	Key  string   // anything else the build depends on (a library it links), for the cache key
	Args []string // given to the compiler after the source, e.g. a library to link and "-lm"
}

// Hook is a function of a stand-in to bind: Fn points at a func variable
// that purego fills in (see purego.RegisterLibFunc).
type Hook struct {
	Name string
	Fn   any
}

// DLL returns the absolute path of the stand-in DLL that the environment
// variable env names, what being the stand-in for the error ("the NVML
// simulator, built from nvmlsim.c").
func DLL(env, what string) (string, error) {
	p := os.Getenv(env)
	if p == "" {
		return "", errors.New(env + " is not set (on Windows " + what + " is a DLL built with mingw-w64, see .ci/windows-wine)")
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
