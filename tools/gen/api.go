package main

import (
	"fmt"
	gotoken "go/token"
	"sort"
	"strings"
)

// reserved are the names besides Go keywords that a parameter cannot have
// in a wrapper: predeclared names and packages the wrapper uses, the
// runtime it calls and its temporaries.
var reserved = map[string]bool{"error": true, "uintptr": true, "uint32": true, "uint64": true,
	"unsafe": true, "math": true, "nil": true, "call": true, "callFloat": true, "frame": true,
	"_f": true, "_fn": true, "_err": true, "_r": true}

// arg is a parameter as the wrapper passes it.
type arg struct {
	name   string // Go name
	goType string
	kind   argKind
	size   int64 // struct size, for aSmall and aBig
}

// apiFile writes zapi.go: a wrapper per function, then the procs.
func (g *gen) apiFile() string {
	var b strings.Builder
	big, floats := false, false
	for _, f := range g.h.funcs {
		bg, fl := g.wrapper(&b, f)
		big, floats = big || bg, floats || fl
	}
	if floats {
		b.WriteString("// floatsPositional reports whether float and double arguments keep their\n" +
			"// position among the integer words (Windows x64) rather than filling the\n" +
			"// floating-point registers apart (System V AMD64, AAPCS64): see\n" +
			"// internal/dl.FloatsPositional.\n" +
			"const floatsPositional = runtime.GOOS == \"windows\"\n\n")
	}
	if big {
		b.WriteString("// structsOnStack reports whether a struct above 16 bytes passed by value goes on the stack\n" +
			"// after the register arguments (System V AMD64) rather than as a pointer to a copy\n" +
			"// (AAPCS64, Windows x64).\n" +
			"const structsOnStack = runtime.GOARCH == \"amd64\" && runtime.GOOS != \"windows\"\n\n")
	}
	names := make([]string, 0, len(g.h.funcs))
	byName := map[string]*function{}
	for _, f := range g.h.funcs {
		names = append(names, g.funcNames[f])
		byName[g.funcNames[f]] = f
	}
	sort.Strings(names)
	if g.lib.byVersion {
		b.WriteString("// The driver entry points, resolved on first use.\nvar (\n")
	} else {
		fmt.Fprintf(&b, "// The entry points of %s, resolved by name on first use.\nvar (\n", strings.Join(g.lib.files(), " and "))
	}
	for _, n := range names {
		f := byName[n]
		if g.lib.byVersion {
			fmt.Fprintf(&b, "proc%s = proc{name: %q, symbol: %q, version: %d}\n", n, g.abi[f].base, f.symbol, g.abi[f].version)
		} else {
			fmt.Fprintf(&b, "proc%s = proc{symbol: %q}\n", n, f.symbol)
		}
	}
	b.WriteString(")\n\n// procs lists every entry point, sorted by Go name.\nvar procs = [...]*proc{\n")
	for _, n := range names {
		fmt.Fprintf(&b, "&proc%s,\n", n)
	}
	b.WriteString("}\n")
	return g.imports(b.String()) + b.String()
}

// wrapper writes the Go function for f. It reports whether f passes a
// large struct by value, and whether it passes floating-point arguments.
func (g *gen) wrapper(b *strings.Builder, f *function) (big, floats bool) {
	name := g.funcNames[f]
	ai := g.abi[f]
	var args []arg
	var sig []string
	for i, p := range f.params {
		a := arg{name: p.name, goType: g.typeName(p.typ)}
		if a.name == "" {
			a.name = fmt.Sprintf("arg%d", i)
		}
		if gotoken.IsKeyword(a.name) || reserved[a.name] {
			a.name += "_"
		}
		var err error
		if a.kind, a.size, err = classify(g.h, p, a.goType); err != nil {
			g.failf("%s: %s: %v", f.pos, f.symbol, err)
		}
		floats = floats || a.kind == aFloat || a.kind == aDouble
		big = big || a.kind == aBig
		args = append(args, a)
		sig = append(sig, a.name+" "+a.goType)
	}
	if len(args) > maxArgWords {
		g.failf("%s: %s takes %d arguments; the call path passes at most %d", f.pos, f.symbol, len(args), maxArgWords)
	}
	if floats && big {
		g.failf("%s: %s takes floating-point arguments and a struct by value: the call path passes no such mix", f.pos, f.symbol)
	}
	if g.lib.byVersion {
		fmt.Fprintf(b, "// %s calls %s, resolved as %s at ABI version %d.\n//\n//\t%s\n", name, f.symbol, ai.base, ai.version, f.proto)
	} else {
		fmt.Fprintf(b, "// %s calls %s.\n//\n//\t%s\n", name, f.symbol, f.proto)
	}
	// ret returns the call's result held in the uintptr r.
	ret := func(r string) string { return fmt.Sprintf("return proc%s.result(%s)\n", name, r) }
	results, zero := "error", ""
	if f.ret != nil {
		if r, err := resolve(g.h, f.ret); err == nil && r.kind == kBuiltin && builtins[r.name].float {
			g.failf("%s: %s returns a floating-point value: the call path returns only the integer register", f.pos, f.symbol)
		}
		t := g.typeName(f.ret)
		fmt.Fprintf(b, "//\n// It returns what %s returns; its error is only that of resolving %s.\n", f.symbol, f.symbol)
		results, zero = "("+t+", error)", "nil, "
		if f.ret.kind != kPointer {
			zero = "0, "
		}
		ret = func(r string) string { return fmt.Sprintf("return *(*%s)(unsafe.Pointer(&%s)), nil\n", t, r) }
	}
	callName := "call"
	switch base := ai.base; {
	case g.lib.pinned[base]:
		callName = "callPinned"
		b.WriteString("//\n// It is a pinned call (see Pinned calls in the package documentation).\n")
	case g.lib.queued[base]:
		callName = "callQueued"
		b.WriteString("//\n// It queues work: a pinned call where PinQueued asks for it (see Pinned\n// calls in the package documentation).\n")
	case g.lib.fences[base]:
		callName = "callFence"
		b.WriteString("//\n// It is a fence (see Pinned calls in the package documentation).\n")
	}
	if f.deprecated {
		fmt.Fprintf(b, "//\n// Deprecated: %s marks %s deprecated.\n", g.lib.header(), f.symbol)
	}
	fmt.Fprintf(b, "func %s(%s) %s {\n", name, strings.Join(sig, ", "), results)
	fmt.Fprintf(b, "_fn, _err := proc%s.fn()\nif _err != nil {\nreturn %s_err\n}\n", name, zero)
	switch {
	case floats:
		b.WriteString("if floatsPositional {\n")
		g.floatCall(b, f, args, true, ret)
		b.WriteString("}\n")
		g.floatCall(b, f, args, false, ret)
		b.WriteString("}\n\n")
	case big:
		b.WriteString("if structsOnStack {\n")
		g.frameCall(b, args, true, callName, ret)
		b.WriteString("}\n")
		g.frameCall(b, args, false, callName, ret)
		b.WriteString("}\n\n")
	default:
		g.frameCall(b, args, false, callName, ret)
		b.WriteString("}\n\n")
	}
	return big, floats
}

// floatCall writes the frame and call of a function with float or double
// arguments (internal/dl.CallFloat through the package's callFloat): the
// integer-class words, then the eight floating-point register words,
// laid out for Windows x64 (positional: argument i is word i, and a
// floating-point one among the first four is also register i) or for
// System V AMD64 and AAPCS64 (the classes count apart; more than eight
// floating-point arguments are refused).
func (g *gen) floatCall(b *strings.Builder, f *function, args []arg, positional bool, ret func(r string) string) {
	type word struct{ typ, value string }
	var words []word
	var xs []string // the floating-point register words, by register
	nx := 0
	for i, a := range args {
		var w word
		switch a.kind {
		case aFloat, aDouble:
			bits := "math.Float32bits(" + a.name + ")"
			if a.kind == aDouble {
				bits = "math.Float64bits(" + a.name + ")"
			}
			x := fmt.Sprintf("_f.x[%%d] = uint64(%s)", bits)
			if a.kind == aDouble {
				x = fmt.Sprintf("_f.x[%%d] = %s", bits)
			}
			w = word{"uintptr", "uintptr(" + bits + ")"}
			if positional {
				if i < 4 {
					xs = append(xs, fmt.Sprintf(x, i))
				}
				break
			}
			if nx == 8 {
				// System V and AAPCS64 would put it on the stack among the
				// integer words that overflow their registers, a layout
				// that depends on the register count: not wired.
				g.failf("%s: %s takes more than 8 floating-point arguments: the call path passes at most 8", f.pos, f.symbol)
			}
			xs = append(xs, fmt.Sprintf(x, nx))
			nx++
			continue
		case aPointer:
			w = word{"unsafe.Pointer", "unsafe.Pointer(" + a.name + ")"}
		case aSmall:
			w = word{"uintptr", fmt.Sprintf("uintptr(*(*uint%d)(unsafe.Pointer(&%s)))", 8*a.size, a.name)}
		default:
			w = word{"uintptr", "uintptr(" + a.name + ")"}
		}
		words = append(words, w)
	}
	if len(words) > maxArgWords {
		g.failf("%s: %s needs %d argument words; the call path passes at most %d", f.pos, f.symbol, len(words), maxArgWords)
	}
	var lines []string
	for i, w := range words {
		lines = append(lines, fmt.Sprintf("a%d %s", i, w.typ))
	}
	if n := maxArgWords - len(words); n > 0 {
		lines = append(lines, fmt.Sprintf("_ [%d]uintptr", n))
	}
	lines = append(lines, "x [8]uint64")
	fmt.Fprintf(b, "var _f struct {\nframe\n%s\n}\n", strings.Join(lines, "\n"))
	fmt.Fprintf(b, "_f.fn, _f.n = _fn, %d\n", len(words))
	for i, w := range words {
		fmt.Fprintf(b, "_f.a%d = %s\n", i, w.value)
	}
	for _, x := range xs {
		b.WriteString(x + "\n")
	}
	b.WriteString("callFloat(&_f.frame)\n" + ret("_f.r"))
}

// sysvRegs is the number of integer argument registers of System V AMD64.
const sysvRegs = 6

// maxArgWords is internal/dl's MaxArgWords: the most argument words a
// call passes.
const maxArgWords = 28

// minWords is the number of argument words the trampoline always reads.
const minWords = 8

// frameCall writes the frame, the call (through the package's function
// callName: call, callPinned, callQueued or callFence) and the return, which ret
// writes from the result word. With onStack, large structs are laid into
// the stack words after the System V registers; otherwise they are passed
// as a pointer to the parameter, a copy.
func (g *gen) frameCall(b *strings.Builder, args []arg, onStack bool, callName string, ret func(r string) string) {
	type slot struct {
		typ, value string
		words      int64
	}
	var regs, stack []slot
	for _, a := range args {
		s := slot{"uintptr", "uintptr(" + a.name + ")", 1}
		switch a.kind {
		case aPointer:
			s = slot{"unsafe.Pointer", "unsafe.Pointer(" + a.name + ")", 1}
		case aSmall:
			s.value = fmt.Sprintf("uintptr(*(*uint%d)(unsafe.Pointer(&%s)))", 8*a.size, a.name)
		case aBig:
			s = slot{"unsafe.Pointer", "unsafe.Pointer(&" + a.name + ")", 1}
			if onStack {
				stack = append(stack, slot{a.goType, a.name, a.size / 8})
				continue
			}
		}
		if onStack && len(regs) == sysvRegs {
			stack = append(stack, s)
			continue
		}
		regs = append(regs, s)
	}
	var lines []string
	words := int64(0)
	field := func(s slot) {
		lines = append(lines, fmt.Sprintf("a%d %s", words, s.typ))
		words += s.words
	}
	for _, s := range regs {
		field(s)
	}
	if len(stack) > 0 && words < sysvRegs {
		lines = append(lines, fmt.Sprintf("_ [%d]uintptr", sysvRegs-words))
		words = sysvRegs
	}
	for _, s := range stack {
		field(s)
	}
	n := words
	if words < minWords {
		lines = append(lines, fmt.Sprintf("_ [%d]uintptr", minWords-words))
	}
	fmt.Fprintf(b, "var _f struct {\nframe\n%s\n}\n", strings.Join(lines, "\n"))
	fmt.Fprintf(b, "_f.fn, _f.n = _fn, %d\n", n)
	words = 0
	for _, s := range append(regs, stack...) {
		if words == int64(len(regs)) && len(stack) > 0 && words < sysvRegs {
			words = sysvRegs
		}
		fmt.Fprintf(b, "_f.a%d = %s\n", words, s.value)
		words += s.words
	}
	b.WriteString(callName + "(&_f.frame)\n" + ret("_f.r"))
}
