// Package cbuild builds the C stand-ins that the tests load in place of
// NVIDIA's libraries (the driver simulator, the NVML simulator, the cuBLAS
// stand-in, and any new one) and binds their test hooks.
//
// A stand-in is a Stub: LoadStub builds it (BuildStub), points the
// package under test at it, binds its hooks and has the leak check of
// package harness watch its live objects. internal/testenv wraps both for
// the stand-ins in internal/testenv/sim (testenv.LoadStub,
// testenv.BuildStub). On Linux it compiles a source with
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
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/purecuda/purecuda/internal/testenv/harness"
)

// Stub is a C stand-in for one of NVIDIA's libraries, loaded by LoadStub.
type Stub struct {
	// Name is the stand-in's name, e.g. "cublassim": on Linux it is built
	// as lib<Name>.so in the cache folder <Name>-<hash>; on Windows it is
	// the DLL that $PURECUDA_<NAME>_DLL names (DLLEnv).
	Name string
	// Sources are its files, paths in the fs.FS given to LoadStub: the .c
	// files are compiled together into one library, the others (headers)
	// are written beside them.
	Sources []string
	// Links are what it is linked with: a library's path (another stand-in,
	// such as the driver simulator, whose streams and memory it then
	// shares: the dynamic loader finds the copy the tests loaded already)
	// or a system library's name for -l ("m").
	Links []string
	// Env are the environment variables that point the package under test
	// at it (its loader's, e.g. "PURECUDA_LIBCUBLAS").
	Env []string
	// Hooks are its test functions, bound once it is built.
	Hooks []Hook
	// Stat is its counter function, long long Stat(const char *name),
	// returning -1 for a name it does not count; "" when it has none.
	Stat string
	// Live are the counts of its live objects that must be back at 0 when
	// the tests end (harness.Watch): what the leak check calls them ("cuBLAS
	// handles") to the name Stat reads them by ("live_handles").
	Live map[string]string
}

// file is a source file of a stand-in.
type file struct {
	name string
	text []byte
}

// BuildStub builds the stand-in name from sources, paths in fsys (the .c
// files compiled together, the others written beside them), linked with
// links (see Stub.Links), with the system C compiler, and returns the
// library's path. The build is cached per compiler, sources and links (in
// the user's cache directory), so a test binary builds a stand-in once
// per change. On Windows it returns the DLL that $PURECUDA_<NAME>_DLL
// names (DLLEnv); elsewhere it fails.
func BuildStub(fsys fs.FS, name string, sources []string, links ...string) (string, error) {
	if len(sources) == 0 {
		return "", errors.New("cbuild: stand-in " + name + " has no sources")
	}
	files := make([]file, len(sources))
	for i, src := range sources {
		text, err := fs.ReadFile(fsys, src)
		if err != nil {
			return "", fmt.Errorf("cbuild: stand-in %s: %w", name, err)
		}
		files[i] = file{src, text}
	}
	return buildStub(name, files, links)
}

// DLLEnv is the environment variable that names the stand-in name's DLL
// on Windows: PURECUDA_<NAME>_DLL, e.g. PURECUDA_CUBLASSIM_DLL.
func DLLEnv(name string) string { return "PURECUDA_" + strings.ToUpper(name) + "_DLL" }

// LoadStub builds s from fsys (BuildStub), sets each of s.Env to the
// library's path, binds s.Hooks and has harness's leak check watch each of
// s.Live; it returns the library's path. Call it before the package under
// test loads its library, once per process (TestMain, or a sync.Once).
func LoadStub(fsys fs.FS, s Stub) (string, error) {
	lib, err := BuildStub(fsys, s.Name, s.Sources, s.Links...)
	if err != nil {
		return "", err
	}
	for _, env := range s.Env {
		if err := os.Setenv(env, lib); err != nil {
			return "", err
		}
	}
	hooks := s.Hooks
	var stat func(name string) int64
	if s.Stat != "" {
		hooks = append(hooks[:len(hooks):len(hooks)], Hook{Name: s.Stat, Fn: &stat})
	}
	if len(hooks) > 0 {
		if err := Bind(lib, hooks...); err != nil {
			return "", err
		}
	}
	for what, counter := range s.Live {
		if stat == nil {
			return "", errors.New("cbuild: stand-in " + s.Name + " has Live counts but no Stat function")
		}
		harness.Watch(what, func() (int64, error) {
			n := stat(counter)
			if n < 0 {
				return 0, fmt.Errorf("%s has no counter %q", s.Name, counter)
			}
			return n, nil
		})
	}
	return lib, nil
}

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
