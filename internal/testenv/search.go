package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/dl"
)

// CheckSearch checks where s, a library's search (dl.Search), looks on
// Linux: first its names through the system's loader, then a toolkit's
// lib64 and targets/*/lib under $CUDA_PATH, $CONDA_PREFIX/lib, and then the
// nvidia/<dir>/lib folders of s.Pip, in that order, in the site-packages of
// $VIRTUAL_ENV, $CONDA_PREFIX and ~/.local. It lays those folders out in a
// temporary directory. Elsewhere it skips the test (the Windows search is
// the toolkit's bin folders and the DLL search path).
func CheckSearch(t *testing.T, s *dl.Search) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the Linux search")
	}
	root := TempDir(t)
	mk := func(parts ...string) string {
		d := filepath.Join(append([]string{root}, parts...)...)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	want := []string{mk("cuda-13.0", "lib64"), mk("cuda-13.0", "targets", "x86_64-linux", "lib"), mk("conda", "lib")}
	for _, site := range [][]string{
		{"venv", "lib", "python3.11", "site-packages"},
		{"conda", "lib", "python3.12", "site-packages"},
		{"home", ".local", "lib", "python3.13", "site-packages"},
	} {
		for _, dir := range s.Pip {
			want = append(want, mk(append(site, "nvidia", dir, "lib")...))
		}
	}
	vars := map[string]string{
		"CUDA_PATH":    filepath.Join(root, "cuda-13.0"),
		"CONDA_PREFIX": filepath.Join(root, "conda"),
		"VIRTUAL_ENV":  filepath.Join(root, "venv"),
		"HOME":         filepath.Join(root, "home"),
	}
	places := s.Places(Env(vars))
	if len(places) < len(s.Names) || !slices.Equal(places[:len(s.Names)], s.Names) {
		t.Errorf("the loader's names %q do not come first: %q", s.Names, places)
	}
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

// CheckVariableOnly checks what a library's open (the package's, reading
// the environment through getenv) does with its variable set (s.Env): a
// path there that does not load is the only place tried, and the error is
// a *dl.LoadError that says so, names the variable and matches sentinel;
// on Linux a library there that opens but is not the one wanted (libc) is
// refused for lacking ident, the symbol that identifies the library.
func CheckVariableOnly(t *testing.T, s *dl.Search, sentinel error, open func(getenv func(string) string) error, ident string) {
	t.Helper()
	bad := filepath.Join(TempDir(t), s.Names[0])
	err := open(func(k string) string {
		if k == s.Env {
			return bad
		}
		return ""
	})
	var le *dl.LoadError
	if !errors.As(err, &le) || !le.FromEnv || len(le.Tried) != 1 || le.Tried[0].Path != bad {
		t.Fatalf("got %v; want a LoadError from %s that tried only %s", err, s.Env, bad)
	}
	if !strings.Contains(err.Error(), "$"+s.Env) || !errors.Is(err, sentinel) {
		t.Errorf("the error does not name $%s, or does not match %v:\n%s", s.Env, sentinel, err)
	}
	if runtime.GOOS != "linux" {
		return
	}
	err = open(func(k string) string {
		if k == s.Env {
			return "libc.so.6"
		}
		return ""
	})
	if !errors.Is(err, sentinel) || !strings.Contains(err.Error(), "libc.so.6: no "+ident+": not ") {
		t.Errorf("got %v; want libc.so.6 refused for lacking %s", err, ident)
	}
}
