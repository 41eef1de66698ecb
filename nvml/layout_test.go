package nvml

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// layoutType is one generated struct or union (zlayout_test.go): a C type
// expression and the Go values that must equal C's.
type layoutType struct {
	C      string // C type expression
	Go     string // Go type name
	Size   uintptr
	Align  uintptr
	CAlign uintptr // C's alignment where it is above what Go can give; else 0
	Fields []layoutField
}

// layoutField is a member of a layoutType, named as offsetof takes it.
type layoutField struct {
	C      string
	Offset uintptr
	Size   uintptr
}

// TestLayoutMatchesC compiles a C program against nvml.h that prints
// sizeof, _Alignof and offsetof for every generated struct, union and
// member, runs it and compares each number with Go's. It needs nvml.h
// ($CUDA_PATH/include, /usr/local/cuda/include or
// ../shared/cuda/13.0/include) and a C compiler; in CI
// (PURECUDA_REQUIRE_SIM=1 and CUDA_PATH set) a missing one is a failure.
func TestLayoutMatchesC(t *testing.T) {
	include, cc := layoutInclude(), ""
	for _, c := range []string{os.Getenv("CC"), "cc", "gcc", "clang"} {
		if p, err := exec.LookPath(c); c != "" && err == nil {
			cc = p
			break
		}
	}
	switch {
	case runtime.GOOS == "windows":
		t.Skip("the layout program is built on Linux (gc lays out types by GOARCH alone, so windows/amd64's layout is linux/amd64's)")
	case include == "" && os.Getenv("CUDA_PATH") != "" && os.Getenv("PURECUDA_REQUIRE_SIM") == "1":
		t.Fatalf("CUDA_PATH=%s has no include/nvml.h", os.Getenv("CUDA_PATH"))
	case include == "":
		t.Skip("no nvml.h: set CUDA_PATH")
	case cc == "" && os.Getenv("PURECUDA_REQUIRE_SIM") == "1":
		t.Fatal("no C compiler (cc, gcc, clang)")
	case cc == "":
		t.Skip("no C compiler (cc, gcc, clang)")
	}
	var b bytes.Buffer
	b.WriteString("#include <stddef.h>\n#include <stdio.h>\n#include <nvml.h>\n\nint main(void) {\n")
	b.WriteString("\tprintf(\"%d 0\\n\", NVML_API_VERSION);\n")
	for _, ty := range layoutTypes {
		fmt.Fprintf(&b, "\tprintf(\"%%zu %%zu\\n\", sizeof(%s), _Alignof(%s));\n", ty.C, ty.C)
		for _, f := range ty.Fields {
			fmt.Fprintf(&b, "\tprintf(\"%%zu %%zu\\n\", offsetof(%s, %s), sizeof(((%s *)0)->%s));\n", ty.C, f.C, ty.C, f.C)
		}
	}
	b.WriteString("\treturn 0;\n}\n")
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "layout.c"), filepath.Join(dir, "layout")
	if err := os.WriteFile(src, b.Bytes(), 0o666); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-std=gnu11", "-I", include, "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("running the layout program: %v", err)
	}
	lines := bufio.NewScanner(bytes.NewReader(out))
	next := func() (a, b uintptr) {
		if !lines.Scan() {
			t.Fatal("the layout program printed too little")
		}
		fmt.Sscan(lines.Text(), &a, &b)
		return a, b
	}
	if v, _ := next(); v != NVML_API_VERSION {
		t.Fatalf("nvml.h in %s is NVML API version %d; the bindings come from %d", include, v, NVML_API_VERSION)
	}
	checked := 0
	for _, ty := range layoutTypes {
		align := ty.Align
		if ty.CAlign != 0 {
			align = ty.CAlign
		}
		if size, calign := next(); size != ty.Size || calign != align {
			t.Errorf("%s (Go %s): size %d, align %d in C; size %d, align %d in Go", ty.C, ty.Go, size, calign, ty.Size, align)
		}
		for _, f := range ty.Fields {
			if off, size := next(); off != f.Offset || size != f.Size {
				t.Errorf("%s.%s (Go %s): offset %d, size %d in C; offset %d, size %d in Go", ty.C, f.C, ty.Go, off, size, f.Offset, f.Size)
			}
			checked++
		}
	}
	t.Logf("%d structs and unions, %d members", len(layoutTypes), checked)
}

// layoutInclude finds the folder holding nvml.h.
func layoutInclude() string {
	var dirs []string
	if p := os.Getenv("CUDA_PATH"); p != "" {
		dirs = append(dirs, filepath.Join(p, "include"))
	}
	dirs = append(dirs, "/usr/local/cuda/include")
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				dirs = append(dirs, filepath.Join(dir, "..", "shared", "cuda", "13.0", "include"))
				break
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "nvml.h")); err == nil {
			return d
		}
	}
	return ""
}
