package main

import (
	"fmt"
	"sort"
	"strings"
)

// resultFile writes zresult.go: what makes the library's status type an
// error, the same in every package. Error gives the C name and the number,
// then the library's own text (the row's errorText, as Description) where
// the library is loaded and that text says more than the name; every value
// the header declares is boxed once, so that a wrapper returning a failure
// allocates nothing. It is "" when the library has no status enum of its
// own (cuBLASLt's is cuBLAS's).
func (g *gen) resultFile() string {
	e := g.resultEnum()
	if e == nil {
		return ""
	}
	name := g.enumNames[e]
	success := g.lib.enumerator(successValue(e))
	if success == "" {
		// The wrappers take 0 for success (a nil error).
		g.failf("%s, the status type, has no value 0 for success", g.lib.result)
	}
	example := success
	for _, v := range e.values {
		if v.value != 0 {
			example = g.lib.enumerator(v.name)
			break
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// resultValues lists every distinct %s value, for boxing errors once.\n", name)
	fmt.Fprintf(&b, "var resultValues = [...]%s{\n", name)
	seen := map[int64]bool{}
	for _, v := range e.values {
		if !seen[v.value] {
			seen[v.value] = true
			fmt.Fprintf(&b, "%s,\n", g.lib.enumerator(v.name))
		}
	}
	b.WriteString("}\n\n")
	fmt.Fprintf(&b, `// boxedResults holds every %[1]s of %[2]s already converted to error, so
// that returning a failure allocates nothing.
var boxedResults = func() map[%[1]s]error {
	m := make(map[%[1]s]error, len(resultValues))
	for _, r := range resultValues {
		m[r] = r
	}
	return m
}()

// boxed returns r as an error, without allocating for a value of %[2]s.
func (r %[1]s) boxed() error {
	if e, ok := boxedResults[r]; ok {
		return e
	}
	return r
}

`, name, g.lib.header())
	text := g.errorTextCall()
	if text == "" {
		fmt.Fprintf(&b, `// Error returns the C name of r and its number, as in %[2]q
// (the library has no text of its own for a status).
// A %[1]s other than %[3]s is an error; compare with errors.Is:
//
//	errors.Is(err, %[4]s)
func (r %[1]s) Error() string { return r.String() + " (" + strconv.Itoa(int(r)) + ")" }
`, name, example+" ("+g.enumValue(e, example)+")", success, example)
		return "import \"strconv\"\n\n" + b.String()
	}
	loaded := "lazy.Loaded()"
	fmt.Fprintf(&b, `// Error returns the C name of r and its number, then the library's own
// text for r where the library is loaded and that text says more than the
// name (%[5]s), as in
// %[2]q.
// A %[1]s other than %[3]s is an error; compare with errors.Is:
//
//	errors.Is(err, %[4]s)
func (r %[1]s) Error() string {
	s := r.String() + " (" + strconv.Itoa(int(r)) + ")"
	if d := r.Description(); d != "" && d != r.String() {
		s += ": " + d
	}
	return s
}

// Description is the library's text for r (%[5]s),
// or "" when the library is not loaded (Description does not load it) or
// has no text for r. The answers are kept.
func (r %[1]s) Description() string {
	if v, ok := descriptions.Load(r); ok {
		return v.(string)
	}
	if %[6]s == nil {
		return ""
	}
%[7]s	d := goString(p)
	descriptions.Store(r, d)
	return d
}

// descriptions caches %[5]s's answers.
var descriptions sync.Map // %[1]s -> string

// goString copies the NUL-terminated C string at p.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
`, name, example+" ("+g.enumValue(e, example)+"): ...", success, example, g.lib.errorText, loaded, text)
	return "import (\n\"strconv\"\n\"sync\"\n\"unsafe\"\n)\n\n" + b.String()
}

// successValue is the name of e's first enumerator of value 0, or "".
func successValue(e *enumDef) string {
	for _, v := range e.values {
		if v.value == 0 {
			return v.name
		}
	}
	return ""
}

// enumValue is the number of the enumerator called name, as Go prints it.
func (g *gen) enumValue(e *enumDef, name string) string {
	for _, v := range e.values {
		if g.lib.enumerator(v.name) == name {
			return fmt.Sprint(v.value)
		}
	}
	return "?"
}

// errorTextCall is the Go code that asks the library for r's text and
// leaves it in p (returning "" from Description on failure), for the two
// shapes of the row's errorText: a status and an out-parameter
// (CUresult cuGetErrorString(CUresult, const char **)) or the text as the
// result (const char *nvrtcGetErrorString(nvrtcResult)). It is "" when the
// row has no errorText or the headers do not declare it; another shape is
// refused.
func (g *gen) errorTextCall() string {
	if g.lib.errorText == "" {
		return ""
	}
	for _, f := range g.h.funcs {
		if f.symbol != g.lib.errorText {
			continue
		}
		name := g.funcNames[f]
		switch {
		case f.ret == nil && len(f.params) == 2:
			return fmt.Sprintf("\tvar p *byte\n\tif %s(r, &p) != nil || p == nil {\n\t\treturn \"\"\n\t}\n", name)
		case f.ret != nil && len(f.params) == 1:
			return fmt.Sprintf("\tp, err := %s(r)\n\tif err != nil || p == nil {\n\t\treturn \"\"\n\t}\n", name)
		}
		g.failf("%s: %s is not of a shape that gives a status's text", f.pos, f.symbol)
	}
	return ""
}

// procFile writes zproc.go: the call frame of every wrapper and, for a
// library whose entry points are looked up by their symbols' names (every
// one but libcuda, whose proc.go resolves through cuGetProcAddress_v2),
// the proc each wrapper holds, resolved on first use through the
// package's dl.Lazy (lazy), and the status as an error. Status values come
// boxed from zresult.go, or, where another package declares the status
// type (cuBLASLt's is cuBLAS's), from that type's Err.
func (g *gen) procFile() string {
	frame := `// frame is the head of the argument block of a call: the wrappers
// declare, per call, a struct that embeds it and follows it with the
// argument words, on their own stack (see package internal/dl). It has
// dl.Frame's layout (checked below); its fields are unexported so that
// the wrappers read the same in every package.
type frame struct {
	fn uintptr // address of the C function
	r  uintptr // the integer return register after the call
	n  uintptr // number of argument words that follow this head
}

// The compiler refuses these lines if frame and dl.Frame differ.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(frame{})-unsafe.Sizeof(dl.Frame{})]
	_ = [1]struct{}{}[unsafe.Offsetof(frame{}.fn)-unsafe.Offsetof(dl.Frame{}.Fn)]
	_ = [1]struct{}{}[unsafe.Offsetof(frame{}.r)-unsafe.Offsetof(dl.Frame{}.R)]
	_ = [1]struct{}{}[unsafe.Offsetof(frame{}.n)-unsafe.Offsetof(dl.Frame{}.N)]
)
`
	if g.lib.byVersion {
		return g.ownImports([]string{"unsafe"}, "", dl) + frame
	}
	var result string
	if e := g.resultEnum(); e != nil {
		name := g.enumNames[e]
		result = fmt.Sprintf(`// result turns a status into an error: nil for %[2]s, else the
// %[1]s itself, boxed without allocating.
func (p *proc) result(r uintptr) error {
	if int32(r) == 0 {
		return nil
	}
	return %[1]s(int32(r)).boxed()
}
`, name, g.lib.enumerator(successValue(e)))
	} else if f, ok := g.h.foreign[g.lib.result]; ok {
		result = fmt.Sprintf(`// result turns a status into an error: nil for success, else the
// %[1]s itself (%[1]s.Err), boxed without allocating.
func (p *proc) result(r uintptr) error { return %[1]s(int32(r)).Err() }
`, f)
	} else {
		g.failf("%s: the status type %s is no enum", g.lib.header(), g.lib.result)
	}
	body := frame + "\n" + fmt.Sprintf(`// proc is one entry point of the library
// (%[1]s). The wrappers hold one each and
// resolve it by its symbol's name on first use, loading the library if
// need be (lazy, the package's dl.Lazy, also remembers a symbol the
// library lacks).
type proc struct {
	addr   uintptr // the resolved address; 0 until resolved (atomic)
	symbol string  // the C symbol
}

// fn returns the entry point's address, resolving it on first use; after
// that it costs one atomic load and one branch.
func (p *proc) fn() (uintptr, error) {
	if a := atomic.LoadUintptr(&p.addr); a != 0 {
		return a, nil
	}
	return lazy.Resolve(&p.addr, p.symbol)
}

%[2]s`, strings.Join(g.lib.files(), ", "), result)
	return g.ownImports([]string{"sync/atomic", "unsafe"}, result, dl) + body
}

// dl is the import path of the call path's package.
const dl = "github.com/purecuda/purecuda/internal/dl"

// ownImports is the import declaration of std, the module's packages
// extra names, and the library's imports that text uses.
func (g *gen) ownImports(std []string, text string, extra ...string) string {
	var b strings.Builder
	b.WriteString("import (\n")
	for _, p := range std {
		fmt.Fprintf(&b, "%q\n", p)
	}
	b.WriteString("\n")
	own := append([]string(nil), extra...)
	for name, path := range g.lib.imports {
		if strings.Contains(text, name+".") {
			own = append(own, path)
		}
	}
	sort.Strings(own)
	for _, p := range own {
		fmt.Fprintf(&b, "%q\n", p)
	}
	b.WriteString(")\n\n")
	return b.String()
}

// callSystems are the systems internal/dl's trampolines run on.
const callSystems = "(linux && (amd64 || arm64)) || (windows && amd64)"

// callFiles are zcall.go, which makes call internal/dl's trampoline where
// it runs, and zcall_other.go, its stub elsewhere (no library can be
// loaded there, so every wrapper returns the load error before it reaches
// call), with their build constraints. The driver's (byVersion) also have
// callPinned, callQueued and callFence (the row's pinned, queued and
// fences lists) and pinQueued; every library whose entry points take
// floating-point arguments by value has callFloat.
func (g *gen) callFiles(api string) (texts, constraints map[string]string) {
	floats := strings.Contains(api, "callFloat(")
	if g.lib.unreached == "" {
		g.failf("library %s has no unreached status for call's stub", g.lib.pkg)
	}
	what := "This stub only keeps"
	if g.lib.byVersion {
		what = "These stubs only keep"
	}
	stub := comment("On other systems no library can be loaded, so every wrapper returns the load error before it reaches call. "+what+" the package building.") +
		fmt.Sprintf("func call(f *frame) { f.r = uintptr(%s) }\n", g.lib.unreached)
	real := "// call runs the C function that f describes; the argument words follow f\n" +
		"// in memory (see frame).\nfunc call(f *frame) { dl.Call((*dl.Frame)(unsafe.Pointer(f))) }\n"
	if g.lib.byVersion {
		stub += `
func callPinned(f *frame) { call(f) }

func callQueued(f *frame) { call(f) }

func callFence(f *frame) { call(f) }

func pinQueued(on bool) bool { return false }
`
		real += `
// callPinned is call for the entry points that return without waiting
// (see dl.CallPinned), callQueued for those that queue work on a stream
// (dl.CallQueued), callFence for the device-wide fences (dl.CallFence).
// tools/gen's library table says which is which.
func callPinned(f *frame) { dl.CallPinned((*dl.Frame)(unsafe.Pointer(f))) }

func callQueued(f *frame) { dl.CallQueued((*dl.Frame)(unsafe.Pointer(f))) }

func callFence(f *frame) { dl.CallFence((*dl.Frame)(unsafe.Pointer(f))) }

// pinQueued makes callQueued's calls pinned or not (dl.SetPinnedQueued).
func pinQueued(on bool) bool { return dl.SetPinnedQueued(on) }
`
	}
	if floats {
		stub += "\n// callFloat is call's stub for the functions with float or double arguments.\nfunc callFloat(f *frame) { call(f) }\n"
		real += "\n// callFloat is call for the functions with float or double arguments: f\n" +
			"// heads a block of internal/dl.FloatFrame's layout.\n" +
			"func callFloat(f *frame) { dl.CallFloat((*dl.Frame)(unsafe.Pointer(f))) }\n"
	}
	imports := ""
	if strings.Contains(g.lib.unreached, ".") {
		imports = g.ownImports(nil, stub)
	}
	texts = map[string]string{
		"zcall.go":       "import (\n\"unsafe\"\n\n\"" + dl + "\"\n)\n\n" + real,
		"zcall_other.go": imports + stub,
	}
	return texts, map[string]string{"zcall.go": callSystems, "zcall_other.go": "!(" + callSystems + ")"}
}
