package layoutcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

// TestDifferencesNamesEachMismatch feeds differences the output of a
// program for two types, with one member and one size wrong in Go.
func TestDifferencesNamesEachMismatch(t *testing.T) {
	types := []Type{
		{C: "struct a", Go: "A", Size: 8, Align: 4, Fields: []Field{{C: "x", Offset: 0, Size: 1}, {C: "y", Offset: 2, Size: 4}}},
		{C: "struct b", Go: "B", Size: 16, Align: 8, CAlign: 16},
	}
	out := "1234 0\n8 4\n0 1\n4 4\n32 16\n"
	v, diffs, err := differences([]byte(out), types)
	if err != nil || v != 1234 {
		t.Fatalf("version %d, error %v", v, err)
	}
	if len(diffs) != 2 || !strings.Contains(diffs[0], "struct a.y (Go A): offset 4, size 4 in C; offset 2") ||
		!strings.Contains(diffs[1], "struct b (Go B): size 32, align 16 in C; size 16, align 16 in Go") {
		t.Errorf("differences: %q", diffs)
	}
	if _, _, err := differences([]byte("1234 0\n8 4\n"), types); err == nil {
		t.Error("a short output gave no error")
	}
}

// TestCheckBuildsAgainstTheHeader runs the whole check with the machine's
// C compiler on a header of its own, found through Program.Env.
func TestCheckBuildsAgainstTheHeader(t *testing.T) {
	if compiler() == "" {
		t.Skip("no C compiler")
	}
	dir := t.TempDir()
	h := "#define T_VERSION 7\ntypedef struct { char c; double d; int i[3]; } t_s;\n"
	if err := os.WriteFile(filepath.Join(dir, "t_layout.h"), []byte(h), 0o666); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LAYOUTCHECK_TEST_INCLUDE", dir)
	type s struct {
		c byte
		d float64
		i [3]int32
	}
	var v s
	Check(t, Program{Header: "t_layout.h", Env: []string{"LAYOUTCHECK_TEST_INCLUDE"}, Version: "T_VERSION", Want: 7, Required: true},
		[]Type{{C: "t_s", Go: "s", Size: unsafe.Sizeof(v), Align: unsafe.Alignof(v), Fields: []Field{
			{C: "c", Offset: unsafe.Offsetof(v.c), Size: unsafe.Sizeof(v.c)},
			{C: "d", Offset: unsafe.Offsetof(v.d), Size: unsafe.Sizeof(v.d)},
			{C: "i", Offset: unsafe.Offsetof(v.i), Size: unsafe.Sizeof(v.i)},
		}}})
}
