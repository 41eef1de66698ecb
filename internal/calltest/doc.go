// Package calltest checks internal/dl's call path for C functions that take
// float and double arguments by value, through wrappers that tools/gen
// writes (zapi.go) from c/calltest.h, the same way it writes cuRAND's. Its
// tests build c/calltest.c with the system's C compiler (on Linux, for
// amd64 and, under qemu-user in CI, arm64) or take the DLL that
// .ci/windows-wine builds with mingw-w64 ($PURECUDA_CALLTEST_DLL), and
// check that every argument arrives in C as it left Go.
package calltest

import (
	"errors"
	"os"

	"github.com/purecuda/purecuda/internal/dl"
)

// EnvLibrary names the variable that gives the fixture's path.
const EnvLibrary = "PURECUDA_CALLTEST_LIB"

var errNoLibrary = errors.New("calltest: fixture not loaded")

type fixture struct{ lib dl.Library }

var search = &dl.Search{Pkg: "calltest", What: "call-path fixture", Env: EnvLibrary,
	Names: []string{"libcalltest.so", "calltest.dll"}, Install: "c/calltest.c, built by the tests"}

var lazy = dl.NewLazy(func() (*fixture, error) {
	return dl.Open(search, os.Getenv, errNoLibrary, func(lib dl.Library, path string) (*fixture, error) {
		if _, err := dl.HasSymbol(lib, "calltestMixed", "the call-path fixture"); err != nil {
			return nil, err
		}
		return &fixture{lib: lib}, nil
	})
}, func(f *fixture) dl.Library { return f.lib }, func(f *fixture, symbol string) error {
	return errors.New("calltest: the fixture lacks " + symbol)
})
