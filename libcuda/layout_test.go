package libcuda

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestLayoutMatchesC compiles a C program that prints sizeof, _Alignof
// and offsetof for every generated struct, union and member, runs it and
// compares each number with Go's.
func TestLayoutMatchesC(t *testing.T) {
	include, cc := layoutInclude(), layoutCompiler()
	switch {
	case include == "" && layoutRequired:
		t.Fatal("no cuda.h in $CUDA_PATH/include, /usr/local/cuda/include or ../shared/cuda/13.0/include")
	case include == "":
		t.Skip("no cuda.h in $CUDA_PATH/include, /usr/local/cuda/include or ../shared/cuda/13.0/include")
	case cc == "" && layoutRequired:
		t.Fatal("no C compiler (cc, gcc, clang)")
	case cc == "":
		t.Skip("no C compiler (cc, gcc, clang)")
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "layout.c"), filepath.Join(dir, "layout")
	if err := os.WriteFile(src, layoutProgram(), 0o666); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-std=gnu11", "-I", include, "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("running the layout program: %v", err)
	}
	checkLayout(t, out, include)
}

// checkLayout compares the layout program's output with Go's numbers.
func checkLayout(t *testing.T, out []byte, include string) {
	t.Helper()
	lines := bufio.NewScanner(bytes.NewReader(out))
	next := func() (a, b uintptr) {
		if !lines.Scan() {
			t.Fatal("the layout program printed too little")
		}
		fmt.Sscan(lines.Text(), &a, &b)
		return a, b
	}
	if version, _ := next(); version != CUDA_VERSION {
		msg := fmt.Sprintf("cuda.h in %s is version %d; the bindings come from %d", include, version, CUDA_VERSION)
		if layoutRequired {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
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
		}
	}
}

// layoutProgram is the C source that prints CUDA_VERSION, then for each
// entry of layoutTypes its size and alignment and each member's offset
// and size, one pair a line.
func layoutProgram() []byte {
	var b bytes.Buffer
	b.WriteString("#include <stddef.h>\n#include <stdio.h>\n#include <cuda.h>\n\nint main(void) {\n")
	b.WriteString("\tprintf(\"%d 0\\n\", CUDA_VERSION);\n")
	for _, ty := range layoutTypes {
		fmt.Fprintf(&b, "\tprintf(\"%%zu %%zu\\n\", sizeof(%s), _Alignof(%s));\n", ty.C, ty.C)
		for _, f := range ty.Fields {
			fmt.Fprintf(&b, "\tprintf(\"%%zu %%zu\\n\", offsetof(%s, %s), sizeof(((%s *)0)->%s));\n", ty.C, f.C, ty.C, f.C)
		}
	}
	b.WriteString("\treturn 0;\n}\n")
	return b.Bytes()
}

// layoutInclude finds the folder holding cuda.h: $CUDA_PATH/include, else
// /usr/local/cuda/include, else ../shared/cuda/13.0/include beside the
// module root.
func layoutInclude() string {
	var dirs []string
	if p := os.Getenv("CUDA_PATH"); p != "" {
		dirs = append(dirs, filepath.Join(p, "include"))
	}
	dirs = append(dirs, "/usr/local/cuda/include")
	if root := layoutModuleRoot(); root != "" {
		dirs = append(dirs, filepath.Join(root, "..", "shared", "cuda", "13.0", "include"))
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "cuda.h")); err == nil {
			return d
		}
	}
	return ""
}

// layoutModuleRoot is the folder holding go.mod, above the working directory.
func layoutModuleRoot() string {
	dir, err := os.Getwd()
	for err == nil {
		if _, statErr := os.Stat(filepath.Join(dir, "go.mod")); statErr == nil {
			return dir
		}
		if parent := filepath.Dir(dir); parent != dir {
			dir = parent
			continue
		}
		break
	}
	return ""
}

// layoutCompiler finds a C compiler: $CC, cc, gcc or clang.
func layoutCompiler() string {
	for _, c := range []string{os.Getenv("CC"), "cc", "gcc", "clang"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(strings.Fields(c)[0]); err == nil {
			return p
		}
	}
	return ""
}
