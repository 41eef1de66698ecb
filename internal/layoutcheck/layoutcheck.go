// Package layoutcheck compares the layouts of the generated Go structs
// with C's: it writes a C program that prints sizeof, _Alignof and
// offsetof of every generated struct, union and member, builds it with
// the machine's C compiler against the library's own headers, runs it and
// checks each number against Go's. The generator writes each package's
// table (zlayout_test.go); the package's layout test names the header and
// the version it was generated from.
package layoutcheck

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Type is one generated struct or union: a C type expression and the Go
// values that must equal C's.
type Type struct {
	C      string // C type expression
	Go     string // Go type name
	Size   uintptr
	Align  uintptr
	CAlign uintptr // C's alignment where it is above what Go can give; else 0
	Fields []Field
}

// Field is a member of a Type, named as offsetof takes it.
type Field struct {
	C      string
	Offset uintptr
	Size   uintptr
}

// Program says what a layout program includes and how it finds it.
type Program struct {
	// Header is the library's header, #included by the program.
	Header string
	// Needs are further headers the program's includes reach (relative
	// paths, such as crt/host_defines.h for the toolkit's cuda_fp16.h):
	// without them in the include folders there is nothing to check.
	Needs []string
	// Env names variables whose values are include folders to search
	// before the standard ones (the GPU host's pip packages).
	Env []string
	// Version is a C integer expression the header defines, and Want the
	// value it had in the header the bindings were generated from.
	Version string
	Want    int
	// Required makes a missing header, header version or C compiler a
	// failure instead of a skip (builds that run the GPU tests have them).
	Required bool
	// Stubs are headers written into a folder searched before all
	// others, by name: stand-ins for what Header includes but does not
	// need for the types checked (nccl.h includes cuda_runtime.h for
	// cudaStream_t, and cuda_fp16.h, which needs the toolkit's CCCL).
	Stubs map[string]string
	// Cross, when set, builds the program for another system and runs it
	// there (windows/amd64 under Wine); else the machine's C compiler
	// builds it for this one.
	Cross *Cross
}

// Cross is a compiler for another system and the command that runs its
// programs here.
type Cross struct {
	CC     string   // the compiler, found on $PATH
	Flags  []string // more flags for it
	Exe    string   // the program file's suffix (".exe")
	Runner []string // the command and arguments the program is run with
	Env    []string // more environment for the runner
}

// Check builds and runs p's program for types and reports every
// difference from Go's numbers.
func Check(t *testing.T, p Program, types []Type) {
	t.Helper()
	if runtime.GOOS == "windows" && p.Cross == nil {
		// gc lays out types by GOARCH alone, so windows/amd64's layout is
		// linux/amd64's, which the Linux runs check.
		t.Skip("the layout program is built on Linux")
	}
	stop := t.Skip
	if p.Required {
		stop = t.Fatal
	}
	cands := p.candidates()
	dir := headerDir(cands, p.Header)
	if dir == "" {
		stop(fmt.Sprintf("no %s in %s: %s", p.Header, strings.Join(cands, ", "), p.whatToSet()))
		return
	}
	for _, need := range p.Needs {
		if headerDir(cands, need) == "" {
			stop(fmt.Sprintf("%s needs %s, which none of %s has: %s", p.Header, need, strings.Join(cands, ", "), p.whatToSet()))
			return
		}
	}
	cc, args, exe, run := compiler(), []string{"-std=gnu11"}, "", []string(nil)
	if x := p.Cross; x != nil {
		cc, exe, run = "", x.Exe, x.Runner
		if path, err := exec.LookPath(x.CC); err == nil {
			cc = path
		}
		args = append(args, x.Flags...)
	}
	if cc == "" {
		stop("no C compiler (cc, gcc, clang, or the cross compiler asked for)")
		return
	}
	tmp := t.TempDir()
	src, bin := filepath.Join(tmp, "layout.c"), filepath.Join(tmp, "layout"+exe)
	if err := os.WriteFile(src, p.source(types), 0o666); err != nil {
		t.Fatal(err)
	}
	// The stubs first, then the header's folder, so that its own
	// includes come from there; the other folders give what it lacks (the
	// toolkit's crt/).
	if len(p.Stubs) > 0 {
		stubs := filepath.Join(tmp, "stubs")
		if err := os.Mkdir(stubs, 0o777); err != nil {
			t.Fatal(err)
		}
		for name, text := range p.Stubs {
			if err := os.WriteFile(filepath.Join(stubs, name), []byte(text), 0o666); err != nil {
				t.Fatal(err)
			}
		}
		args = append(args, "-I", stubs)
	}
	args = append(args, "-I", dir)
	for _, d := range cands {
		if d != dir {
			args = append(args, "-I", d)
		}
	}
	args = append(args, "-o", bin, src)
	// The compiler and the program (under Wine, for a cross check) are
	// bounded, generously, so that a stuck runner fails the test instead
	// of hanging it until go test's own timeout.
	ctx, cancel := context.WithTimeout(t.Context(), commandBound)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, out)
	}
	cmd := exec.CommandContext(ctx, bin)
	if len(run) > 0 {
		cmd = exec.CommandContext(ctx, run[0], append(run[1:], bin)...)
		cmd.Env = append(os.Environ(), p.Cross.Env...)
	}
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running the layout program %v: %v", cmd.Args, err)
	}
	compare(t, p, dir, out, types)
}

// commandBound bounds the compile and the run of a layout program
// together: seconds on an idle machine, far more under load or in a first
// Wine start.
const commandBound = 3 * time.Minute

// compare checks the program's output, one pair a line, against types.
func compare(t *testing.T, p Program, dir string, out []byte, types []Type) {
	t.Helper()
	version, diffs, err := differences(out, types)
	switch {
	case err != nil:
		t.Fatal(err)
	case version != p.Want:
		msg := fmt.Sprintf("%s in %s has %s %d; the bindings come from %d", p.Header, dir, p.Version, version, p.Want)
		if p.Required {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	for _, d := range diffs {
		t.Error(d)
	}
	t.Logf("%d types of %s (from %s) checked, %d differences", len(types), p.Header, dir, len(diffs))
}

// differences reads the program's output (the version, then the pairs of
// each type and member) and lists where it differs from types.
func differences(out []byte, types []Type) (version int, diffs []string, err error) {
	lines := bufio.NewScanner(bytes.NewReader(out))
	next := func() (a, b uintptr, ok bool) {
		if !lines.Scan() {
			return 0, 0, false
		}
		_, err := fmt.Sscan(lines.Text(), &a, &b)
		return a, b, err == nil
	}
	short := fmt.Errorf("the layout program printed too little or not numbers")
	v, _, ok := next()
	if !ok {
		return 0, nil, short
	}
	for _, ty := range types {
		align := ty.Align
		if ty.CAlign != 0 {
			align = ty.CAlign
		}
		size, calign, ok := next()
		if !ok {
			return int(v), diffs, short
		}
		if size != ty.Size || calign != align {
			diffs = append(diffs, fmt.Sprintf("%s (Go %s): size %d, align %d in C; size %d, align %d in Go", ty.C, ty.Go, size, calign, ty.Size, align))
		}
		for _, f := range ty.Fields {
			off, size, ok := next()
			if !ok {
				return int(v), diffs, short
			}
			if off != f.Offset || size != f.Size {
				diffs = append(diffs, fmt.Sprintf("%s.%s (Go %s): offset %d, size %d in C; offset %d, size %d in Go", ty.C, f.C, ty.Go, off, size, f.Offset, f.Size))
			}
		}
	}
	return int(v), diffs, nil
}

// source is the C program: the version first, then for each type its size
// and alignment and each member's offset and size, one pair a line.
func (p Program) source(types []Type) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "#include <stddef.h>\n#include <stdio.h>\n#include <%s>\n\nint main(void) {\n", p.Header)
	fmt.Fprintf(&b, "\tprintf(\"%%lld 0\\n\", (long long)(%s));\n", p.Version)
	for _, ty := range types {
		fmt.Fprintf(&b, "\tprintf(\"%%zu %%zu\\n\", sizeof(%s), _Alignof(%s));\n", ty.C, ty.C)
		for _, f := range ty.Fields {
			fmt.Fprintf(&b, "\tprintf(\"%%zu %%zu\\n\", offsetof(%s, %s), sizeof(((%s *)0)->%s));\n", ty.C, f.C, ty.C, f.C)
		}
	}
	b.WriteString("\treturn 0;\n}\n")
	return b.Bytes()
}

// candidates are the include folders searched, in order: those of p.Env,
// $CUDA_PATH/include, /usr/local/cuda/include, and the generator's
// headers (../shared/cuda/13.0/include beside the module root).
func (p Program) candidates() []string {
	var dirs []string
	for _, e := range p.Env {
		if v := os.Getenv(e); v != "" {
			dirs = append(dirs, v)
		}
	}
	if v := os.Getenv("CUDA_PATH"); v != "" {
		dirs = append(dirs, filepath.Join(v, "include"))
	}
	dirs = append(dirs, "/usr/local/cuda/include")
	if root := moduleRoot(); root != "" {
		dirs = append(dirs, filepath.Join(root, "..", "shared", "cuda", "13.0", "include"))
	}
	return dirs
}

// whatToSet says how to point the check at a toolkit's headers.
func (p Program) whatToSet() string {
	s := "set CUDA_PATH to a CUDA toolkit (its include folder is searched)"
	for _, e := range p.Env {
		s += " or " + e + " to a folder of headers"
	}
	return s
}

// headerDir is the first of dirs that has name, or "".
func headerDir(dirs []string, name string) string {
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, name)); err == nil {
			return d
		}
	}
	return ""
}

// moduleRoot is the folder holding go.mod, above the working directory.
func moduleRoot() string {
	dir, err := os.Getwd()
	for err == nil {
		if _, statErr := os.Stat(filepath.Join(dir, "go.mod")); statErr == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return ""
}

// compiler finds a C compiler: $CC, cc, gcc or clang.
func compiler() string {
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
