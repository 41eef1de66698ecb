//go:build linux && (amd64 || arm64)

package nvrtc

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/internal/testenv"
)

// env is a fake environment for open and the search.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestSearchPlacesFollowToolkitPipAndConda(t *testing.T) { testenv.CheckSearch(t, search) }

func TestLoadErrorListsEveryPlaceTriedAndTheVariable(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nowhere", "libnvrtc.so.13")
	_, tried, _ := dl.OpenFirst(search, []string{dir, missing, "libnvrtc-absent.so.13"}, openNVRTC)
	if len(tried) != 3 {
		t.Fatalf("tried %d places, want 3: %v", len(tried), tried)
	}
	err := error(&LoadError{Search: search, Tried: tried, Is_: ErrNoLibrary})
	msg := err.Error()
	for _, want := range []string{dir + ": no libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so there",
		missing + ": file does not exist", "libnvrtc-absent.so.13: ", EnvLibrary} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if !errors.Is(err, ErrNoLibrary) {
		t.Error("errors.Is(LoadError, ErrNoLibrary) is false")
	}
}

func TestBadPathInTheVariableIsAnErrorWithoutFallback(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "libnvrtc.so.13")
	l, err := open(env(map[string]string{EnvLibrary: bad}))
	if l != nil {
		t.Fatalf("opened %s", l.path)
	}
	var le *LoadError
	if !errors.As(err, &le) || !le.FromEnv || len(le.Tried) != 1 || le.Tried[0].Path != bad {
		t.Fatalf("got %v; want a LoadError from %s that tried only %s", err, EnvLibrary, bad)
	}
	if !strings.Contains(err.Error(), "$"+EnvLibrary) || !errors.Is(err, ErrNoLibrary) {
		t.Errorf("message does not name the variable, or does not match ErrNoLibrary:\n%s", err)
	}
}

func TestLibraryWithoutNvrtcVersionIsNotNVRTC(t *testing.T) {
	l, err := open(env(map[string]string{EnvLibrary: "libc.so.6"}))
	if l != nil {
		t.Fatalf("took libc as NVRTC")
	}
	if !errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), "libc.so.6: no nvrtcVersion: not NVRTC") {
		t.Fatalf("got %v; want libc.so.6 refused as not NVRTC", err)
	}
}

func TestMissingSymbolIsATypedErrorNamingIt(t *testing.T) {
	saved := lazy.Loaded()
	if saved == nil {
		lazy.Store(&nvrtcLibrary{lib: fakeLibrary{}, path: "/fake/libnvrtc.so.12", major: 12, minor: 4})
		t.Cleanup(func() { lazy.Store(nil) })
	}
	p := &proc{symbol: "nvrtcNoSuchEntryPoint"}
	a, err := p.fn()
	var se *SymbolError
	if a != 0 || !errors.As(err, &se) || se.Symbol != "nvrtcNoSuchEntryPoint" || !errors.Is(err, ErrSymbol) {
		t.Fatalf("fn() = %#x, %v; want a SymbolError for nvrtcNoSuchEntryPoint", a, err)
	}
	if !strings.Contains(err.Error(), "nvrtcNoSuchEntryPoint is not provided by") {
		t.Errorf("message %q does not name the symbol", err)
	}
	if _, again := p.fn(); again != err {
		t.Errorf("a second lookup gave %v, want the remembered %v", again, err)
	}
}

// fakeLibrary is a library with a fixed symbol table.
type fakeLibrary map[string]uintptr

func (l fakeLibrary) Sym(name string) (uintptr, bool) { a, ok := l[name]; return a, ok }
func (l fakeLibrary) Close()                          {}
