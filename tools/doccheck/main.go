// Command doccheck checks the package documentation of the module's public
// packages (every package outside internal/ that is not a command and has
// non-test Go files): each has its package comment in doc.go and in no
// other file (of any build tag), and `go doc` of the package shows that
// comment's first and last sentences, which fails when a blank line
// detaches part of the comment from the package clause.
//
// Usage, from the module root (CI runs it):
//
//	go run ./tools/doccheck
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

func main() {
	pkgs, err := publicPackages()
	if err != nil {
		fmt.Fprintln(os.Stderr, "doccheck:", err)
		os.Exit(2)
	}
	failed := false
	for _, p := range pkgs {
		problems := checkDir(p.dir)
		if len(problems) == 0 {
			text, err := packageComment(filepath.Join(p.dir, "doc.go"))
			if err == nil {
				problems = append(problems, checkGoDoc(p.path, text)...)
			} else {
				problems = append(problems, err.Error())
			}
		}
		for _, pr := range problems {
			fmt.Printf("%s: %s\n", p.path, pr)
			failed = true
		}
		if len(problems) == 0 {
			fmt.Printf("%s: ok\n", p.path)
		}
	}
	if failed {
		os.Exit(1)
	}
}

type pkg struct{ path, dir string }

// publicPackages lists the module's packages that users import.
func publicPackages() ([]pkg, error) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{.Name}}", "./...").Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			return nil, fmt.Errorf("go list: unexpected line %q", line)
		}
		path, dir, name := f[0], f[1], f[2]
		if name == "main" || strings.Contains(path+"/", "/internal/") {
			continue
		}
		if files, err := sourceFiles(dir); err != nil {
			return nil, err
		} else if len(files) == 0 { // tests only
			continue
		}
		pkgs = append(pkgs, pkg{path: path, dir: dir})
	}
	return pkgs, nil
}

// checkDir says what is wrong with where the package comments of dir's
// non-test files are: there must be one, in doc.go.
func checkDir(dir string) []string {
	names, err := sourceFiles(dir)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	hasDoc := false
	for _, name := range names {
		text, err := packageComment(name)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		base := filepath.Base(name)
		switch {
		case base == "doc.go" && text == "":
			problems = append(problems, "doc.go has no package comment (a blank line between it and the package clause detaches it)")
		case base == "doc.go":
			hasDoc = true
		case text != "":
			problems = append(problems, base+" carries a package comment: move it into doc.go")
		}
	}
	if !hasDoc && len(problems) == 0 {
		problems = append(problems, "no doc.go")
	}
	return problems
}

// sourceFiles lists dir's non-test Go files, of every build tag, sorted.
func sourceFiles(dir string) ([]string, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var files []string
	for _, name := range names {
		if !strings.HasSuffix(name, "_test.go") {
			files = append(files, name)
		}
	}
	sort.Strings(files)
	return files, nil
}

// packageComment is the text of a file's package comment, "" if none. In
// doc.go, a comment above the package clause that a blank line detaches
// from it (other than directives such as //go:build) is an error: go doc
// would not show it. (Other files may start with a detached header, as
// generated files do.)
func packageComment(name string) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		return "", err
	}
	for _, g := range f.Comments {
		if filepath.Base(name) != "doc.go" || g == f.Doc || g.Pos() > f.Package {
			continue
		}
		if directives(g.List) {
			continue
		}
		return "", fmt.Errorf("%s:%d: a comment that a blank line detaches from the package clause (go doc does not show it)",
			filepath.Base(name), fset.Position(g.Pos()).Line)
	}
	if f.Doc == nil {
		return "", nil
	}
	return f.Doc.Text(), nil
}

// directives says whether every line of a comment group is a directive
// (//go:build, //go:generate, // +build, //line).
func directives(list []*ast.Comment) bool {
	for _, c := range list {
		t := c.Text
		if !strings.HasPrefix(t, "//go:") && !strings.HasPrefix(t, "// +build") && !strings.HasPrefix(t, "//line ") {
			return false
		}
	}
	return true
}

// checkGoDoc runs go doc on the package and says what of text it lacks.
func checkGoDoc(path, text string) []string {
	out, err := exec.Command("go", "doc", path).CombinedOutput()
	if err != nil {
		return []string{fmt.Sprintf("go doc: %v: %s", err, bytes.TrimSpace(out))}
	}
	shown := words(string(out))
	var problems []string
	first := words(new(doc.Package).Synopsis(text))
	if first == "" || !strings.Contains(shown, first) {
		problems = append(problems, fmt.Sprintf("go doc does not show the first sentence of doc.go: %q", first))
	}
	if last := lastLine(text); !strings.Contains(shown, last) {
		problems = append(problems, fmt.Sprintf("go doc does not show the last line of doc.go's comment: %q", last))
	}
	return problems
}

var space = regexp.MustCompile(`\s+`)

// words is s with brackets (doc links) dropped and white space made one
// space, so that go doc's reflowing does not matter.
func words(s string) string {
	s = strings.NewReplacer("[", "", "]", "").Replace(s)
	return strings.TrimSpace(space.ReplaceAllString(s, " "))
}

// lastLine is the comment's last non-empty line, as words.
func lastLine(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return words(lines[len(lines)-1])
}
