package nvrtc

import (
	"errors"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/dl"
)

func TestMissingSymbolIsATypedErrorNamingIt(t *testing.T) {
	saved := lazy.Loaded()
	if saved == nil {
		lazy.Store(&dl.Opened{Lib: fakeLibrary{}, Path: "/fake/libnvrtc.so.12", Major: 12, Minor: 4})
		t.Cleanup(func() { lazy.Store(nil) })
	}
	p := &proc{symbol: "nvrtcNoSuchEntryPoint"}
	a, err := p.fn()
	var se *SymbolError
	if a != 0 || !errors.As(err, &se) || se.Symbol != "nvrtcNoSuchEntryPoint" || !errors.Is(err, ErrSymbol) {
		t.Fatalf("fn() = %#x, %v; want a SymbolError for nvrtcNoSuchEntryPoint", a, err)
	}
	if saved == nil && err.Error() != "nvrtc: nvrtcNoSuchEntryPoint is not provided by /fake/libnvrtc.so.12 (NVRTC 12.4)" {
		t.Errorf("message %q does not name the symbol, the library and its version", err)
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
