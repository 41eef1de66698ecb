package libcuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/dl"
)

func TestLoadErrorNamesEveryPlaceTriedAndTheVariable(t *testing.T) {
	e := &LoadError{Tried: []Attempt{
		{Path: "/opt/x/libcuda.so.1", Err: errors.New("no such file")},
		{Path: "libcuda.so.1", Err: errors.New("not found")},
	}}
	msg := e.Error()
	for _, want := range []string{"/opt/x/libcuda.so.1: no such file", "libcuda.so.1: not found", EnvLibrary} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if !errors.Is(e, ErrNoDriver) {
		t.Error("errors.Is(LoadError, ErrNoDriver) is false")
	}
}

// fakeLibrary is a library with a fixed symbol table.
type fakeLibrary map[string]uintptr

func (l fakeLibrary) Sym(name string) (uintptr, bool) { a, ok := l[name]; return a, ok }
func (l fakeLibrary) Close()                          {}

// lookupErr is d.lookup with its two kinds of failure as one error.
func lookupErr(d *dl.Opened, p *proc) (uintptr, error) {
	a, missing, err := lookup(d, p)
	if missing != nil {
		return a, missing
	}
	return a, err
}

func TestLookupRefusesABINewerThanTheDriver(t *testing.T) {
	d := &dl.Opened{Lib: fakeLibrary{"cuNew_v2": 0x1234}, Version: 12040}
	_, err := lookupErr(d, &proc{name: "cuNew", symbol: "cuNew_v2", version: 12050})
	var se *SymbolError
	if !errors.As(err, &se) || se.Missing || se.Symbol != "cuNew_v2" || se.Version != 12050 || se.Driver != 12040 {
		t.Fatalf("got %#v", err)
	}
	if !errors.Is(err, ErrSymbol) {
		t.Error("errors.Is(SymbolError, ErrSymbol) is false")
	}
	if want := "libcuda: cuNew_v2 needs driver version 12.5 or later; the loaded driver is 12.4"; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
}

func TestLookupFallsBackToVersionedSymbolWithoutGetProcAddress(t *testing.T) {
	d := &dl.Opened{Lib: fakeLibrary{"cuThing_v3": 0x1234}, Version: 11040}
	a, err := lookupErr(d, &proc{name: "cuThing", symbol: "cuThing_v3", version: 11030})
	if err != nil || a != 0x1234 {
		t.Fatalf("lookup = %#x, %v; want 0x1234", a, err)
	}
	_, err = lookupErr(d, &proc{name: "cuGone", symbol: "cuGone", version: 2000})
	var se *SymbolError
	if !errors.As(err, &se) || !se.Missing {
		t.Fatalf("missing symbol: got %v", err)
	}
	if !strings.Contains(err.Error(), "cuGone") || !strings.Contains(err.Error(), "11.4") {
		t.Errorf("message %q should name the symbol and the driver version", err)
	}
}

// withoutDriver makes the package act, until the test ends, as if no
// driver could be loaded: TestMain has loaded the simulator or the driver.
func withoutDriver(t *testing.T) {
	t.Helper()
	saved := lazy.Loaded()
	lazy.Store(nil)
	lazy.SetFailure(&LoadError{Tried: []Attempt{{Path: "nowhere", Err: errors.New("absent")}}})
	t.Cleanup(func() { lazy.Store(saved) })
}

func TestProcWithoutDriverReturnsLoadErrorAndNoPanic(t *testing.T) {
	withoutDriver(t)
	// A wrapper not resolved yet: the generated ones resolved theirs when
	// TestMain loaded the driver.
	p := &proc{name: "cuDriverGetVersion", symbol: "cuDriverGetVersion", version: 2020}
	if _, err := p.fn(); !errors.Is(err, ErrNoDriver) {
		t.Fatalf("resolving an entry point without a driver = %v, want ErrNoDriver", err)
	}
}

func TestFormatVersion(t *testing.T) {
	for v, want := range map[int]string{13000: "13.0", 12050: "12.5", 11040: "11.4", 12081: "12.8.1"} {
		if got := FormatVersion(v); got != want {
			t.Errorf("FormatVersion(%d) = %q, want %q", v, got, want)
		}
	}
}
