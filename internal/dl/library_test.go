package dl

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// rows are the table's rows, in a fixed order.
func rows(t *testing.T) []*Spec {
	t.Helper()
	if len(Libraries) == 0 {
		t.Fatal("the library table (zlibraries.go) is empty")
	}
	var keys []string
	for k := range Libraries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []*Spec
	for _, k := range keys {
		out = append(out, Libraries[k])
	}
	return out
}

// env is a getenv over vars alone.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestEveryRowIsComplete(t *testing.T) {
	for _, s := range rows(t) {
		if Libraries[s.Pkg] != s {
			t.Errorf("%s: filed under another package's name", s.Pkg)
		}
		if s.What == "" || !strings.HasPrefix(s.Env, "PURECUDA_LIB") || len(s.Linux) == 0 || s.Install == "" || len(s.Ident) == 0 {
			t.Errorf("%s: a column is missing: %+v", s.Pkg, s)
		}
		if s.Driver && len(s.Pip) > 0 || !s.Driver && (len(s.LinuxDirs) > 0 || len(s.WindowsDirs) > 0) {
			t.Errorf("%s: driver %v with pip %q and folders %q %q", s.Pkg, s.Driver, s.Pip, s.LinuxDirs, s.WindowsDirs)
		}
		if (s.Version == "") != (s.VersionKind == VersionNone) {
			t.Errorf("%s: version call %q of kind %d", s.Pkg, s.Version, s.VersionKind)
		}
		for _, name := range s.Windows {
			if !strings.HasSuffix(name, ".dll") || strings.ContainsAny(name, `\/`) {
				t.Errorf("%s: Windows name %q is no bare DLL name", s.Pkg, name)
			}
		}
		if !slices.Equal(s.namesFor("linux"), s.Linux) || !slices.Equal(s.namesFor("windows"), s.Windows) || s.namesFor("darwin") != nil {
			t.Errorf("%s: namesFor does not pick the system's names", s.Pkg)
		}
	}
}

// The System32 rule: a driver library is looked for by full path in the
// system folder, then in its other folders, never by a bare name (which
// the DLL search path, the current folder and PATH included, would
// resolve). A toolkit library: %CUDA_PATH%'s bin\x64 and bin, then the
// names through the DLL search path.
func TestWindowsPlaces(t *testing.T) {
	const sys = `C:\Windows\System32`
	vars := map[string]string{"CUDA_PATH": `C:\CUDA\v13.0\`, "ProgramW6432": `C:\Program Files`}
	for _, s := range rows(t) {
		got := s.windowsPlaces(env(vars), sys)
		var want []string
		if s.Driver {
			for _, n := range s.Windows {
				want = append(want, sys+`\`+n)
			}
			for _, d := range s.WindowsDirs {
				d = strings.Replace(d, "%ProgramW6432%", vars["ProgramW6432"], 1)
				for _, n := range s.Windows {
					want = append(want, d+`\`+n)
				}
			}
			for _, p := range got {
				if !strings.HasPrefix(p, `C:\`) {
					t.Errorf("%s: %q is no full path: the DLL search path would resolve it", s.Pkg, p)
				}
			}
		} else {
			want = append([]string{`C:\CUDA\v13.0\bin\x64`, `C:\CUDA\v13.0\bin`}, s.Windows...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: windowsPlaces = %q, want %q", s.Pkg, got, want)
		}
	}
	nvml := &Spec{Windows: []string{"nvml.dll"}, Driver: true, WindowsDirs: []string{`%ProgramW6432%\NVIDIA Corporation\NVSMI`}}
	got := nvml.windowsPlaces(env(nil), sys)
	if want := []string{sys + `\nvml.dll`}; !slices.Equal(got, want) {
		t.Errorf("with ProgramW6432 unset: %q, want %q", got, want)
	}
	got = nvml.windowsPlaces(env(vars), sys)
	if want := []string{sys + `\nvml.dll`, `C:\Program Files\NVIDIA Corporation\NVSMI\nvml.dll`}; !slices.Equal(got, want) {
		t.Errorf("with ProgramW6432 set: %q, want %q", got, want)
	}
}

func TestErrorTextNamesEveryPlaceAndTheWayOut(t *testing.T) {
	for _, s := range rows(t) {
		f := &Failure{
			Tried: []Attempt{
				{Path: "/opt/x/" + s.Linux[0], Err: os.ErrNotExist},
				{Path: s.Linux[0], Err: errors.New("cannot open shared object file")},
				{Path: "/opt/y", Err: nil},
			},
			Sites: []string{"/v/lib/python3*/site-packages (the python3 on PATH: /v/bin/python3)"},
		}
		msg := s.ErrorText(f)
		for _, want := range []string{
			s.Pkg + ": cannot load the " + s.What + " library; tried:",
			"\t/opt/x/" + s.Linux[0] + ": file does not exist\n",
			"\t" + s.Linux[0] + ": cannot open shared object file\n",
			"\t/opt/y: failed\n", // never an empty reason
			"\t/v/lib/python3*/site-packages (the python3 on PATH: /v/bin/python3)\n",
			s.Install + ", or set " + s.Env + " to the library's path",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: the message lacks %q:\n%s", s.Pkg, want, msg)
			}
		}
		f = &Failure{Tried: []Attempt{{Path: "/nowhere/x.so", Err: os.ErrNotExist}}, FromEnv: true}
		msg = s.ErrorText(f)
		for _, want := range []string{"library that $" + s.Env + " names; tried:\n\t/nowhere/x.so: ", "point " + s.Env + " at the " + s.What + " library", "or unset it"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: the message lacks %q:\n%s", s.Pkg, want, msg)
			}
		}
	}
}

func TestSymbolText(t *testing.T) {
	for _, c := range []struct {
		s                     Spec
		version, major, minor int
		want                  string
	}{
		{Spec{Pkg: "p", What: "L", VersionKind: VersionMajorMinor}, 0, 12, 4, "p: f is not provided by /l.so (L 12.4)"},
		{Spec{Pkg: "p", What: "L", VersionKind: VersionProperties}, 130102, 13, 1, "p: f is not provided by /l.so (L 13.1.2)"},
		{Spec{Pkg: "p", What: "L", VersionKind: VersionReturn}, 130100, 0, 0, "p: f is not provided by /l.so (L version 130100)"},
		{Spec{Pkg: "p", What: "L", VersionKind: VersionInt}, 13000, 0, 0, "p: f is not provided by /l.so (L version 13000)"},
		{Spec{Pkg: "p", What: "L", Driver: true}, 0, 0, 0, "p: f is not provided by /l.so (an older NVIDIA driver)"},
		{Spec{Pkg: "p", What: "L"}, 0, 0, 0, "p: f is not provided by /l.so"},
	} {
		if got := c.s.SymbolText("f", "/l.so", c.version, c.major, c.minor); got != c.want {
			t.Errorf("SymbolText = %q, want %q", got, c.want)
		}
	}
}

// fakeLibrary is a library with a fixed symbol table.
type fakeLibrary map[string]uintptr

func (l fakeLibrary) Sym(name string) (uintptr, bool) { a, ok := l[name]; return a, ok }
func (l fakeLibrary) Close()                          {}

// take refuses a library without every identifying symbol, naming the
// first one missing.
func TestTakeChecksEveryIdentifyingSymbol(t *testing.T) {
	for _, s := range rows(t) {
		_, err := s.take(fakeLibrary{}, "/x.so")
		if want := fmt.Sprintf("no %s: not the %s library", s.Ident[0], s.What); err == nil || err.Error() != want {
			t.Errorf("%s: take of an empty library = %v, want %q", s.Pkg, err, want)
		}
		syms := fakeLibrary{}
		for _, sym := range s.Ident {
			syms[sym] = 1
		}
		if s.VersionKind == VersionNone {
			l, err := s.take(syms, "/x.so")
			if err != nil || l.Path != "/x.so" || l.Lib == nil {
				t.Errorf("%s: take = %+v, %v", s.Pkg, l, err)
			}
			continue
		}
		if s.Version != s.Ident[0] {
			delete(syms, s.Version)
			_, err := s.take(syms, "/x.so")
			if want := fmt.Sprintf("no %s: not the %s library", s.Version, s.What); err == nil || err.Error() != want {
				t.Errorf("%s: take without the version call = %v, want %q", s.Pkg, err, want)
			}
		}
	}
}

func TestOpenWithNoNamesForTheSystemSaysSo(t *testing.T) {
	s := &Spec{Pkg: "p", What: "Lib", Env: "PURECUDA_LIBP"}
	l, f := Open(s, env(nil))
	if l != nil || f == nil || len(f.Tried) != 1 || !strings.Contains(f.Tried[0].Err.Error(), "NVIDIA ships no Lib for ") {
		t.Fatalf("Open = %v, %+v; want one attempt saying no build exists", l, f)
	}
}

func TestLazyRemembersFailuresUntilLoad(t *testing.T) {
	opens := 0
	fail := true
	lib := &Opened{Lib: fakeLibrary{"f": 0x10}, Path: "/l.so"}
	l := NewLazy(func() (*Opened, error) {
		opens++
		if fail {
			return nil, errors.New("absent")
		}
		return lib, nil
	}, func(o *Opened, symbol string) error { return fmt.Errorf("no %s in %s", symbol, o.Path) })
	if _, err := l.Get(); err == nil {
		t.Fatal("Get succeeded")
	}
	fail = false
	if _, err := l.Get(); err == nil || opens != 1 {
		t.Fatalf("a second Get = %v after %d opens: want the remembered failure", err, opens)
	}
	if v, err := l.Load(); v != lib || err != nil || opens != 2 {
		t.Fatalf("Load = %v, %v after %d opens; want the library, opened again", v, err, opens)
	}
	var addr uintptr
	if a, err := l.Resolve(&addr, "f"); a != 0x10 || addr != 0x10 || err != nil {
		t.Errorf("Resolve(f) = %#x, %v, stored %#x", a, err, addr)
	}
	var none uintptr
	_, err1 := l.Resolve(&none, "g")
	_, err2 := l.Resolve(&none, "g")
	if err1 == nil || err1 != err2 || err1.Error() != "no g in /l.so" {
		t.Errorf("Resolve(g) = %v then %v; want one remembered error", err1, err2)
	}
	l.Store(nil)
	if l.Loaded() != nil {
		t.Error("Store(nil) left a library")
	}
}
