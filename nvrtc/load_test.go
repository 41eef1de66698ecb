//go:build linux && (amd64 || arm64)

package nvrtc

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/dl"
)

// env is a fake environment for open and the search.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestSearchPlacesFollowToolkitPipAndConda(t *testing.T) {
	root := t.TempDir()
	mk := func(parts ...string) string {
		d := filepath.Join(append([]string{root}, parts...)...)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	cudaPath := mk("cuda-13.0")
	lib64 := mk("cuda-13.0", "lib64")
	targets := mk("cuda-13.0", "targets", "x86_64-linux", "lib")
	condaLib := mk("conda", "lib")
	condaSite := mk("conda", "lib", "python3.12", "site-packages", "nvidia", "cu13", "lib")
	venvSite := mk("venv", "lib", "python3.11", "site-packages", "nvidia", "cuda_nvrtc", "lib")
	userSite := mk("home", ".local", "lib", "python3.13", "site-packages", "nvidia", "cu13", "lib")
	places := search.Places(env(map[string]string{
		"CUDA_PATH":    cudaPath,
		"CONDA_PREFIX": filepath.Join(root, "conda"),
		"VIRTUAL_ENV":  filepath.Join(root, "venv"),
		"HOME":         filepath.Join(root, "home"),
	}))
	if !slices.Equal(places[:3], []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) {
		t.Errorf("the loader's names do not come first: %q", places)
	}
	want := []string{lib64, targets, condaLib, venvSite, condaSite, userSite}
	at := -1
	for _, w := range want {
		i := slices.Index(places, w)
		if i < 0 {
			t.Errorf("%s is not searched: %q", w, places)
			continue
		}
		if i < at {
			t.Errorf("%s is searched before the places listed ahead of it: %q", w, places)
		}
		at = i
	}
}

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
