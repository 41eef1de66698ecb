package main

import (
	"fmt"
	"go/format"
	"path/filepath"
	"sort"
	"strings"
)

// versionKinds maps the table's versionKind to internal/dl's VersionKind.
var versionKinds = map[string]string{
	"":           "dl.VersionNone",
	"int":        "dl.VersionInt",
	"majorMinor": "dl.VersionMajorMinor",
	"properties": "dl.VersionProperties",
	"return":     "dl.VersionReturn",
}

// checkLoader refuses a row whose loader columns do not make a loader.
func (l *library) checkLoader() error {
	switch {
	case l.what == "":
		return nil
	case l.env == "" || len(l.linux) == 0 || l.install == "" || len(l.ident) == 0:
		return fmt.Errorf("library %s: a library row needs env, linux, install and ident", l.pkg)
	case (l.version == "") != (l.versionKind == ""):
		return fmt.Errorf("library %s: version and versionKind go together", l.pkg)
	case !l.driver && (len(l.linuxDirs) > 0 || len(l.windowsDirs) > 0):
		return fmt.Errorf("library %s: linuxDirs and windowsDirs are for driver libraries", l.pkg)
	case l.driver && len(l.pip) > 0:
		return fmt.Errorf("library %s: a driver library has no pip folders", l.pkg)
	}
	if _, ok := versionKinds[l.versionKind]; !ok {
		return fmt.Errorf("library %s: versionKind %q is none of int, majorMinor, properties, return", l.pkg, l.versionKind)
	}
	return nil
}

// noLibraryName is the Go name of the row's load failure sentinel.
func (l *library) noLibraryName() string {
	if l.noLibrary != "" {
		return l.noLibrary
	}
	return "ErrNoLibrary"
}

// loadFile writes zload.go: the package's loader on internal/dl's one
// mechanism, from the row's loader columns. Every package gets EnvLibrary,
// the load failure sentinel, ErrSymbol, Load, Attempt and LoadError; the
// libraries resolved by name also Library, Loaded and SymbolError (libcuda
// resolves through cuGetProcAddress_v2 and keeps its own, proc.go).
func (g *gen) loadFile() string {
	l := g.lib
	if err := l.checkLoader(); err != nil {
		g.failf("%v", err)
	}
	noLib := l.noLibraryName()
	var b strings.Builder
	b.WriteString("import (\n\"errors\"\n\"os\"\n\n\"" + dl + "\"\n)\n\n")
	example := l.envExample
	if example == "" {
		dir := "/usr/local/cuda/lib64/"
		if l.driver {
			dir = "/usr/lib/x86_64-linux-gnu/"
		}
		example = dir + l.linux[0]
	}
	b.WriteString(comment(fmt.Sprintf("EnvLibrary names the environment variable that points at the %s library to load, e.g. %s=%s. When it is set, that library is the only one tried.", l.what, l.env, example)))
	fmt.Fprintf(&b, "const EnvLibrary = %q\n\n", l.env)
	b.WriteString(comment(fmt.Sprintf("%s is matched (errors.Is) by the error of every call made when the %s library cannot be loaded.", noLib, l.what)))
	fmt.Fprintf(&b, "var %s = errors.New(%q)\n\n", noLib, l.pkg+": "+l.what+" library not loaded")
	b.WriteString(comment("ErrSymbol is matched (errors.Is) by every SymbolError."))
	fmt.Fprintf(&b, "var ErrSymbol = errors.New(%q)\n\n", l.pkg+": "+l.what+" entry point unavailable")
	b.WriteString(comment("spec is the package's row of tools/gen's library table (internal/dl's Libraries): where Load looks and what it takes."))
	fmt.Fprintf(&b, "var spec = dl.Libraries[%q]\n\n", l.pkg)
	missing := "nil"
	if !l.byVersion {
		missing = "func(l *dl.Opened, symbol string) error {\n\treturn &SymbolError{Symbol: symbol, Path: l.Path" + l.versionFields("l") + "}\n}"
	}
	b.WriteString(comment("lazy is the library, opened on first use; the generated procs resolve their entry points through it."))
	fmt.Fprintf(&b, "var lazy = dl.NewLazy(func() (*dl.Opened, error) { return open(os.Getenv) }, %s)\n\n", missing)
	b.WriteString(comment(l.loadDoc1()))
	b.WriteString("func Load() error {\n\t_, err := lazy.Load()\n\treturn err\n}\n\n")
	b.WriteString(`// open finds and opens the library as Load describes, reading the
// environment through getenv.
func open(getenv func(string) string) (*dl.Opened, error) {
	l, f := dl.Open(spec, getenv)
	if f != nil {
		e := &LoadError{FromEnv: f.FromEnv, Sites: f.Sites}
		for _, a := range f.Tried {
			e.Tried = append(e.Tried, Attempt{Path: a.Path, Err: a.Err})
		}
		return nil, e
	}
	return l, nil
}

`)
	b.WriteString(comment(fmt.Sprintf("Attempt is one place Load looked for the %s library.", l.what)))
	fmt.Fprintf(&b, `type Attempt struct {
	Path string // a file, a folder, or a name for the system's loader
	Err  error  // why no %s library was taken there
}

`, l.what)
	b.WriteString(comment(fmt.Sprintf("LoadError reports that no %s library could be loaded. Its message names every place tried, and says how to point at the library; errors.Is matches %s.", l.what, noLib)))
	fmt.Fprintf(&b, `type LoadError struct {
	Tried []Attempt // every place tried, in order
	// FromEnv is true when the one place tried was the file that
	// $%s names: while it is set, no other place is tried.
	FromEnv bool
	// Sites are the Python site-packages folders (glob patterns) in which
	// NVIDIA's pip wheels were looked for, each followed by where it came
	// from ($VIRTUAL_ENV, the python3 on PATH, ...); none for a library
	// that comes with the driver, or when FromEnv.
	Sites []string
}

func (e *LoadError) Error() string {
	f := dl.Failure{FromEnv: e.FromEnv, Sites: e.Sites}
	for _, a := range e.Tried {
		f.Tried = append(f.Tried, dl.Attempt{Path: a.Path, Err: a.Err})
	}
	return spec.ErrorText(&f)
}

// Is reports whether target is %s.
func (e *LoadError) Is(target error) bool { return target == %s }
`, l.env, noLib, noLib)
	if l.byVersion {
		return b.String()
	}
	b.WriteString("\n" + comment(fmt.Sprintf("Library describes the loaded %s library.", l.what)))
	fmt.Fprintf(&b, "type Library struct {\n\tPath string // as it was opened\n%s}\n\n", l.versionDecl())
	b.WriteString(comment(fmt.Sprintf("Loaded describes the loaded %s library; ok is false when none is.", l.what)))
	fmt.Fprintf(&b, `func Loaded() (lib Library, ok bool) {
	l := lazy.Loaded()
	if l == nil {
		return Library{}, false
	}
	return Library{Path: l.Path%s}, true
}

`, l.versionFields("l"))
	b.WriteString(comment(fmt.Sprintf("SymbolError reports an entry point that the loaded %s library lacks (an older release). Only the function that needs it fails.", l.what)))
	fmt.Fprintf(&b, `type SymbolError struct {
	Symbol string // the C symbol
	Path   string // the library as it was opened
%s}

func (e *SymbolError) Error() string {
	return spec.SymbolText(e.Symbol, e.Path, %s)
}

// Is reports whether target is ErrSymbol, so errors.Is(err, ErrSymbol)
// catches every SymbolError.
func (e *SymbolError) Is(target error) bool { return target == ErrSymbol }
`, l.versionDecl(), l.versionArgs())
	return b.String()
}

// versionDecl declares the version fields of Library and SymbolError.
func (l *library) versionDecl() string {
	switch l.versionKind {
	case "majorMinor":
		return fmt.Sprintf("\tMajor, Minor int // %s's answer: 13 and 0 for 13.0\n", l.version)
	case "properties":
		return fmt.Sprintf("\t// Version is major*10000 + minor*100 + patch, from %s:\n\t// 130100 for 13.1.0.\n\tVersion int\n", l.version)
	case "int", "return":
		return fmt.Sprintf("\tVersion int // %s's answer\n", l.version)
	}
	return ""
}

// versionFields sets the version fields from the dl.Opened named v.
func (l *library) versionFields(v string) string {
	switch l.versionKind {
	case "majorMinor":
		return fmt.Sprintf(", Major: %[1]s.Major, Minor: %[1]s.Minor", v)
	case "properties", "int", "return":
		return fmt.Sprintf(", Version: %s.Version", v)
	}
	return ""
}

// versionArgs are SymbolText's version arguments from a SymbolError e.
func (l *library) versionArgs() string {
	switch l.versionKind {
	case "majorMinor":
		return "0, e.Major, e.Minor"
	case "properties", "int", "return":
		return "e.Version, 0, 0"
	}
	return "0, 0, 0"
}

// loadDoc1 is Load's doc comment, from the row.
func (l *library) loadDoc1() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Load opens the %[1]s library, if it is not open yet. The first call that needs it does it too; Load is for programs that want the error early, or that set %[2]s after a failed attempt: unlike the lazy load, which remembers its failure, Load tries again.\n\n", l.what, l.env)
	fmt.Fprintf(&b, "With $%s set, that library is loaded or the load fails: no other place is tried. Otherwise, on Linux: %s through the dynamic loader (LD_LIBRARY_PATH, the ld.so cache), then ", l.env, orList(l.linux))
	if l.driver {
		fmt.Fprintf(&b, "in %s.", andList(l.linuxDirs))
	} else {
		b.WriteString("in /usr/local/cuda/lib64, /usr/local/cuda/targets/*/lib, $CUDA_PATH/lib64 and targets/*/lib, $CONDA_PREFIX/lib")
		if len(l.pip) > 0 {
			var pip []string
			for _, p := range l.pip {
				pip = append(pip, "nvidia/"+p+"/lib")
			}
			fmt.Fprintf(&b, ", and the %s folders of the Python site-packages of $VIRTUAL_ENV, $CONDA_PREFIX, the python3 found on PATH (its virtual environment's, found without running it), ~/.local, /usr/local and /usr", andList(pip))
		}
		b.WriteString(".")
	}
	b.WriteString(" On Windows: ")
	switch {
	case len(l.windows) == 0:
		fmt.Fprintf(&b, "none (NVIDIA ships no %s for Windows).", l.what)
	case l.driver:
		fmt.Fprintf(&b, "%s in the system folder (System32)", orList(l.windows))
		if len(l.windowsDirs) > 0 {
			fmt.Fprintf(&b, ", then in %s", andList(l.windowsDirs))
		}
		b.WriteString("; never through the DLL search path.")
	default:
		fmt.Fprintf(&b, "%s in %%CUDA_PATH%%\\bin\\x64 and %%CUDA_PATH%%\\bin, then through the DLL search path (which includes PATH).", orList(l.windows))
	}
	ident := append([]string(nil), l.ident...)
	if l.version != "" && !contains(ident, l.version) {
		ident = append(ident, l.version)
	}
	fmt.Fprintf(&b, " A library that opens but lacks %s is not taken. A failure is a *LoadError that names every place tried.", orList(ident))
	if l.loadDoc != "" {
		b.WriteString("\n\n" + l.loadDoc)
	}
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// orList writes "a, b or c"; andList "a, b and c".
func orList(items []string) string  { return joinList(items, " or ") }
func andList(items []string) string { return joinList(items, " and ") }

func joinList(items []string, last string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + last + items[len(items)-1]
}

// comment turns text into a Go comment, its lines filled to 76 columns;
// a blank line separates paragraphs.
func comment(text string) string {
	var b strings.Builder
	for i, para := range strings.Split(text, "\n\n") {
		if i > 0 {
			b.WriteString("//\n")
		}
		line := "//"
		for _, w := range strings.Fields(para) {
			if len(line)+1+len(w) > 76 && line != "//" {
				b.WriteString(line + "\n")
				line = "//"
			}
			line += " " + w
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// tableFile writes internal/dl/zlibraries.go: the loader columns of every
// row of the table that names a library, as internal/dl's Libraries.
func tableFile() ([]byte, error) {
	var b strings.Builder
	b.WriteString(`// Regenerate with: go generate ./libcuda (any package tools/gen writes)
// Code generated by tools/gen from its library table (tools/gen/library.go). DO NOT EDIT.

package dl

// Libraries are the rows of tools/gen's library table that name a library
// file, by Go package: what each package's generated zload.go loads.
var Libraries = map[string]*Spec{
`)
	rows := append([]*library(nil), libraries...)
	sort.Slice(rows, func(i, j int) bool { return rows[i].pkg < rows[j].pkg })
	for _, l := range rows {
		if l.what == "" {
			continue
		}
		if err := l.checkLoader(); err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%q: {\n", l.pkg)
		fmt.Fprintf(&b, "Pkg: %q,\nWhat: %q,\nEnv: %q,\n", l.pkg, l.what, l.env)
		list := func(field string, v []string) {
			if len(v) > 0 {
				fmt.Fprintf(&b, "%s: %#v,\n", field, v)
			}
		}
		list("Linux", l.linux)
		list("Windows", l.windows)
		if l.driver {
			b.WriteString("Driver: true,\n")
		}
		list("LinuxDirs", l.linuxDirs)
		list("WindowsDirs", l.windowsDirs)
		list("Pip", l.pip)
		fmt.Fprintf(&b, "Install: %q,\n", l.install)
		list("Ident", l.ident)
		if l.version != "" {
			fmt.Fprintf(&b, "Version: %q,\nVersionKind: %s,\n", l.version, strings.TrimPrefix(versionKinds[l.versionKind], "dl."))
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	return format.Source([]byte(b.String()))
}

// tableDir is internal/dl's folder under the module root.
var tableDir = filepath.Join("internal", "dl")

// tableName is the file tableFile writes.
const tableName = "zlibraries.go"
