package tests

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cublaslt"
	"github.com/purecuda/purecuda/cufft"
	"github.com/purecuda/purecuda/curand"
	"github.com/purecuda/purecuda/internal/calltest"
	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/nccl"
	"github.com/purecuda/purecuda/nvjitlink"
	"github.com/purecuda/purecuda/nvml"
	"github.com/purecuda/purecuda/nvrtc"
)

// loaderRow is one bound package's generated loader surface (zload.go),
// seen from outside: its variable and sentinel, and a LoadError and a
// SymbolError made through its public types.
type loaderRow struct {
	env      string
	noLib    error
	errSym   error
	loadErr  func(path string, reason error, fromEnv bool) error
	symErr   func(symbol, path string) error // nil: the package has its own (libcuda)
	tried    func(err error) (paths []string, fromEnv, ok bool)
	symbolOK func(err error) bool
}

// triedOf reads the places tried and FromEnv of the *L LoadError in err
// through its documented fields (Tried[i].Path, FromEnv), the same for
// every package's generated type.
func triedOf[L any, PL interface {
	*L
	error
}](err error) (paths []string, fromEnv, ok bool) {
	var e PL
	if !errors.As(err, &e) {
		return nil, false, false
	}
	v := reflect.ValueOf(e).Elem()
	tried := v.FieldByName("Tried")
	for i := range tried.Len() {
		paths = append(paths, tried.Index(i).FieldByName("Path").String())
	}
	return paths, v.FieldByName("FromEnv").Bool(), true
}

// loaders has a row per package of tools/gen's library table.
var loaders = map[string]loaderRow{
	"libcuda": {libcuda.EnvLibrary, libcuda.ErrNoDriver, libcuda.ErrSymbol,
		func(p string, r error, env bool) error {
			return &libcuda.LoadError{Tried: []libcuda.Attempt{{Path: p, Err: r}}, FromEnv: env}
		}, nil,
		triedOf[libcuda.LoadError], nil},
	"nvrtc": {nvrtc.EnvLibrary, nvrtc.ErrNoLibrary, nvrtc.ErrSymbol,
		func(p string, r error, env bool) error {
			return &nvrtc.LoadError{Tried: []nvrtc.Attempt{{Path: p, Err: r}}, FromEnv: env}
		},
		func(s, p string) error { return &nvrtc.SymbolError{Symbol: s, Path: p, Major: 12, Minor: 8} },
		triedOf[nvrtc.LoadError],
		func(err error) bool { var e *nvrtc.SymbolError; return errors.As(err, &e) }},
	"nvjitlink": {nvjitlink.EnvLibrary, nvjitlink.ErrNoLibrary, nvjitlink.ErrSymbol,
		func(p string, r error, env bool) error {
			return &nvjitlink.LoadError{Tried: []nvjitlink.Attempt{{Path: p, Err: r}}, FromEnv: env}
		},
		func(s, p string) error { return &nvjitlink.SymbolError{Symbol: s, Path: p, Major: 13} },
		triedOf[nvjitlink.LoadError],
		func(err error) bool { var e *nvjitlink.SymbolError; return errors.As(err, &e) }},
	"nvml": {nvml.EnvLibrary, nvml.ErrNoLibrary, nvml.ErrSymbol,
		func(p string, r error, env bool) error {
			return &nvml.LoadError{Tried: []nvml.Attempt{{Path: p, Err: r}}, FromEnv: env}
		},
		func(s, p string) error { return &nvml.SymbolError{Symbol: s, Path: p} },
		triedOf[nvml.LoadError],
		func(err error) bool { var e *nvml.SymbolError; return errors.As(err, &e) }},
	"cublas": {cublas.EnvLibrary, cublas.ErrNoLibrary, cublas.ErrSymbol,
		func(p string, r error, env bool) error {
			return &cublas.LoadError{Tried: []cublas.Attempt{{Path: p, Err: r}}, FromEnv: env}
		},
		func(s, p string) error { return &cublas.SymbolError{Symbol: s, Path: p, Version: 120804} },
		triedOf[cublas.LoadError],
		func(err error) bool { var e *cublas.SymbolError; return errors.As(err, &e) }},
	"cublaslt": {cublaslt.EnvLibrary, cublaslt.ErrNoLibrary, cublaslt.ErrSymbol,
		func(p string, r error, env bool) error {
			return &cublaslt.LoadError{Tried: []cublaslt.Attempt{{Path: p, Err: r}}, FromEnv: env}
		},
		func(s, p string) error { return &cublaslt.SymbolError{Symbol: s, Path: p, Version: 120804} },
		triedOf[cublaslt.LoadError],
		func(err error) bool { var e *cublaslt.SymbolError; return errors.As(err, &e) }},
	"nccl": {nccl.EnvLibrary, nccl.ErrNoLibrary, nccl.ErrSymbol,
		func(p string, r error, env bool) error {
			return &nccl.LoadError{Tried: []nccl.Attempt{{Path: p, Err: r}}, FromEnv: env}
		},
		func(s, p string) error { return &nccl.SymbolError{Symbol: s, Path: p, Version: 22809} },
		triedOf[nccl.LoadError],
		func(err error) bool { var e *nccl.SymbolError; return errors.As(err, &e) }},
	"curand": {curand.EnvLibrary, curand.ErrNoLibrary, curand.ErrSymbol,
		func(p string, r error, env bool) error {
			return &curand.LoadError{Tried: []curand.Attempt{{Path: p, Err: r}}, FromEnv: env}
		},
		func(s, p string) error { return &curand.SymbolError{Symbol: s, Path: p, Version: 10400} },
		triedOf[curand.LoadError],
		func(err error) bool { var e *curand.SymbolError; return errors.As(err, &e) }},
	"cufft": {cufft.EnvLibrary, cufft.ErrNoLibrary, cufft.ErrSymbol,
		func(p string, r error, env bool) error {
			return &cufft.LoadError{Tried: []cufft.Attempt{{Path: p, Err: r}}, FromEnv: env}
		},
		func(s, p string) error { return &cufft.SymbolError{Symbol: s, Path: p, Version: 12000} },
		triedOf[cufft.LoadError],
		func(err error) bool { var e *cufft.SymbolError; return errors.As(err, &e) }},
	"internal/calltest": {calltest.EnvLibrary, calltest.ErrNoLibrary, calltest.ErrSymbol,
		func(p string, r error, env bool) error {
			return &calltest.LoadError{Tried: []calltest.Attempt{{Path: p, Err: r}}, FromEnv: env}
		},
		func(s, p string) error { return &calltest.SymbolError{Symbol: s, Path: p} },
		triedOf[calltest.LoadError],
		func(err error) bool { var e *calltest.SymbolError; return errors.As(err, &e) }},
}

// Every row of the library table has its package's loader here, and each
// package's generated LoadError and SymbolError say what the row says:
// the variable, every place tried with its reason, the sentinel matched.
func TestEveryPackagesLoaderFollowsItsRow(t *testing.T) {
	var pkgs []string
	for pkg := range dl.Libraries {
		pkgs = append(pkgs, pkg)
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		spec := dl.Libraries[pkg]
		l, ok := loaders[pkg]
		if !ok {
			t.Errorf("%s: a row of the library table without a loader row here", pkg)
			continue
		}
		if l.env != spec.Env {
			t.Errorf("%s: EnvLibrary %q, the row says %q", pkg, l.env, spec.Env)
		}
		reason := errors.New("cannot open shared object file")
		for _, fromEnv := range []bool{false, true} {
			err := l.loadErr("/opt/x/"+spec.Linux[0], reason, fromEnv)
			if !errors.Is(err, l.noLib) || errors.Is(err, l.errSym) {
				t.Errorf("%s: the LoadError does not match only its sentinel: %v", pkg, err)
			}
			paths, env, ok := l.tried(err)
			if !ok || env != fromEnv || len(paths) != 1 || paths[0] != "/opt/x/"+spec.Linux[0] {
				t.Errorf("%s: the LoadError's fields: %q, %v, %v", pkg, paths, env, ok)
			}
			msg := err.Error()
			for _, want := range []string{pkg + ": cannot load the " + spec.What + " library", "/opt/x/" + spec.Linux[0] + ": " + reason.Error(), spec.Env} {
				if !strings.Contains(msg, want) {
					t.Errorf("%s: the message lacks %q:\n%s", pkg, want, msg)
				}
			}
		}
		if l.symErr == nil {
			continue
		}
		err := l.symErr("fooBar_v2", "/opt/x/lib.so")
		if !errors.Is(err, l.errSym) || errors.Is(err, l.noLib) || !l.symbolOK(err) ||
			!strings.HasPrefix(err.Error(), pkg+": fooBar_v2 is not provided by /opt/x/lib.so") {
			t.Errorf("%s: SymbolError %v", pkg, err)
		}
	}
	if len(loaders) != len(dl.Libraries) {
		t.Errorf("%d loader rows here, %d rows in the table", len(loaders), len(dl.Libraries))
	}
}

// A package's open, from outside: with the variable naming a file that
// does not exist, Load fails with the package's LoadError naming that
// file alone, unless the package is loaded already (the suite's TestMain
// loads some), in which case Load succeeds without looking.
func TestLoadWithAMissingFileInTheVariable(t *testing.T) {
	for pkg, load := range map[string]func() error{
		"nvrtc": nvrtc.Load, "nvjitlink": nvjitlink.Load, "cublaslt": cublaslt.Load,
		"curand": curand.Load, "cufft": cufft.Load,
	} {
		l := loaders[pkg]
		bad := filepath.Join(os.TempDir(), "purecuda-absent", pkg+".so")
		t.Setenv(l.env, bad)
		err := load()
		if err == nil {
			t.Logf("%s: loaded before this test", pkg)
			continue
		}
		paths, fromEnv, ok := l.tried(err)
		if !ok || !fromEnv || len(paths) != 1 || paths[0] != bad || !errors.Is(err, l.noLib) || !strings.Contains(err.Error(), bad+": ") {
			t.Errorf("%s: Load with $%s=%s: %v", pkg, l.env, bad, err)
		}
	}
}
