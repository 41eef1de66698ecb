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

// A path in $PURECUDA_LIBNVRTC is the only place tried; a library there
// without nvrtcVersion (libc) is not NVRTC.
func TestBadPathInTheVariableIsAnErrorWithoutFallback(t *testing.T) {
	testenv.CheckVariableOnly(t, search, ErrNoLibrary, func(getenv func(string) string) error {
		l, err := open(getenv)
		if l != nil {
			t.Fatalf("opened %s", l.path)
		}
		return err
	}, "nvrtcVersion")
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
