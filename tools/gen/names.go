package main

import (
	"fmt"
	"sort"
	"strings"
)

// exported gives a field or method name: the C name with its first letter
// upper case.
func exported(c string) string {
	if c != "" && 'a' <= c[0] && c[0] <= 'z' {
		return strings.ToUpper(c[:1]) + c[1:]
	}
	return c
}

// goName is the Go name of a C type name (library.goName), but for a
// name whose _t the library drops and that a function's Go name already
// takes: it keeps its _t (nvml.h's struct nvmlGpmMetricsGet_t is
// GpmMetricsGet_t beside the function nvmlGpmMetricsGet).
func (g *gen) goName(c string) string {
	name := g.lib.goName(c)
	if g.funcWords[name] && strings.HasSuffix(c, "_t") && !strings.HasSuffix(name, "_t") {
		return name + "_t"
	}
	return name
}

// declare records a package-level Go name and fails on a collision.
func (g *gen) declare(name, what string) {
	if prev, ok := g.idents[name]; ok {
		g.failf("Go name %s is used by %s and by %s", name, prev, what)
	}
	g.idents[name] = what
}

// names chooses the Go names of types, fields and functions, checks
// that no two collide and finds each function's ABI version.
func (g *gen) names() {
	g.funcWords = map[string]bool{}
	for _, f := range g.h.funcs {
		g.funcWords[g.lib.funcName(baseName(f.symbol))] = true
		g.funcWords[g.lib.funcName(f.symbol)] = true
	}
	g.nameTypes()
	g.declareTypes()
	g.nameFunctions()
}

// nameTypes names records, enums and the typedefs that define Go types.
func (g *gen) nameTypes() {
	for _, d := range g.h.decls {
		switch {
		case d.rec != nil:
			g.nameRecord(d.rec, "")
		case d.enum != nil && len(d.enum.typedefs) > 0:
			g.enumNames[d.enum] = g.goName(g.definedName(d.enum.typedefs[0]))
		case d.enum != nil && d.enum.tag != "":
			g.enumNames[d.enum] = g.goName(d.enum.tag)
		case d.typedef != nil && g.isScalar(d.typedef):
			g.scalars[d.typedef.name] = g.goName(g.definedName(d.typedef.name))
		}
	}
}

// declareTypes declares the package-level names of types and enumerators.
func (g *gen) declareTypes() {
	for _, d := range g.h.decls {
		switch {
		case d.rec != nil:
			g.declareRecord(d.rec)
		case d.enum != nil:
			if name, ok := g.enumNames[d.enum]; ok {
				g.declare(name, "enum "+d.enum.tag)
			}
			for _, v := range d.enum.values {
				g.declare(g.lib.enumerator(v.name), "an enumerator")
			}
		case d.typedef != nil:
			def, alias := g.typedefDecl(d.typedef)
			for _, name := range []string{def, alias} {
				if name != "" {
					g.declare(name, "typedef "+d.typedef.name)
				}
			}
		}
	}
}

// typedefDecl says what a typedef declares in Go: a defined type, an
// alias, both (CUdevice_v1: type Device int32 and its alias Device_v1) or
// nothing (cuuint32_t is uint32; CUfoo named a type defined earlier).
func (g *gen) typedefDecl(td *typedefDef) (def, alias string) {
	name := g.goName(td.name)
	switch {
	case g.transparent(td) || g.promoted[td.name]:
	case g.isScalar(td):
		def = g.scalars[td.name]
		if def != name {
			alias = name
		}
	case g.typeName(td.typ) != name:
		alias = name
	}
	return def, alias
}

// nameFunctions names the wrappers and finds their ABI versions. Go names
// drop the library's prefix ("cu") and the version suffix; where cuX and
// cuX_v2 are both declared, cuX_v2 keeps its suffix.
func (g *gen) nameFunctions() {
	byGo := map[string][]*function{}
	for _, f := range g.h.funcs {
		name := g.lib.funcName(baseName(f.symbol))
		byGo[name] = append(byGo[name], f)
	}
	for name, fs := range byGo {
		for _, f := range fs {
			g.funcNames[f] = name
			if len(fs) > 1 && baseName(f.symbol) != f.symbol {
				g.funcNames[f] = g.lib.funcName(f.symbol)
			}
		}
	}
	seen := map[abiInfo]string{}
	bases := map[string]bool{}
	for _, f := range g.h.funcs {
		g.declare(g.funcNames[f], f.symbol)
		g.declare("proc"+g.funcNames[f], f.symbol)
		if !g.lib.byVersion {
			continue
		}
		base, version, err := abiVersion(g.h, f)
		if err != nil {
			g.failf("%v", err)
		}
		ai := abiInfo{base, version}
		if other, dup := seen[ai]; dup {
			g.failf("%s and %s both resolve as %s version %d", other, f.symbol, base, version)
		}
		seen[ai] = f.symbol
		g.abi[f] = ai
		bases[base] = true
	}
	for _, list := range []map[string]bool{g.lib.pinned, g.lib.queued, g.lib.fences} {
		for n := range list {
			if !bases[n] {
				g.counts.unlisted = append(g.counts.unlisted, n)
			}
		}
	}
	sort.Strings(g.counts.unlisted)
}

// definedName is the C name of the Go type a typedef chain defines. When
// CUfoo_v1 is the first name and "typedef CUfoo_v1 CUfoo;" follows, the
// plain CUfoo names the Go type and CUfoo_v1 becomes an alias of it.
func (g *gen) definedName(first string) string {
	plain := baseName(first)
	if td := g.h.typedefs[plain]; plain != first && td != nil && td.typ.kind == kNamed && td.typ.name == first {
		g.promoted[plain] = true
		return plain
	}
	return first
}

// transparent reports whether td is a <stdint.h>-style name (cuuint32_t)
// that Go spells with its builtin type. A name with the library's type
// prefix is not (nvml.h's nvmlAffinityScope_t is AffinityScope).
func (g *gen) transparent(td *typedefDef) bool {
	return strings.HasSuffix(td.name, "_t") && td.typ.kind == kBuiltin && !g.lib.typePrefix.MatchString(td.name)
}

// isScalar reports whether td defines a Go type of its own that is not a
// struct, union or enum: a number, a handle or a function pointer.
func (g *gen) isScalar(td *typedefDef) bool {
	switch t := td.typ; t.kind {
	case kBuiltin:
		return !g.transparent(td)
	case kPointer:
		return true
	case kNamed:
		return g.transparent(g.h.typedefs[t.name])
	}
	return false
}

// nameRecord names r and the records defined inside it. Records without a
// typedef or tag are named after their place: Outer_member, or
// Outer_anonN for the Nth anonymous member.
func (g *gen) nameRecord(r *record, name string) {
	if _, done := g.recNames[r]; done {
		return
	}
	switch {
	case len(r.typedefs) > 0:
		name = g.goName(g.definedName(r.typedefs[0]))
	case r.tag != "":
		name = g.goName(r.tag)
	}
	g.recNames[r] = name
	used := map[string]bool{}
	anon := 0
	for _, f := range r.fields {
		fname := ""
		if f.name == "" {
			fname = fmt.Sprintf("Anon%d", anon)
			g.nameRecord(f.typ.rec, fmt.Sprintf("%s_anon%d", name, anon))
			anon++
		} else {
			fname = exported(f.name)
			if inner := g.inner(r, f); inner != nil {
				g.nameRecord(inner, name+"_"+f.name)
			}
		}
		for used[fname] {
			fname += "_"
		}
		used[fname] = true
		g.fields[f] = fname
	}
}

// inner returns the record defined in f's declaration inside r, if any.
// A record declared with several members belongs to the first.
func (g *gen) inner(r *record, f *field) *record {
	t := f.typ
	for t.kind == kArray || t.kind == kPointer {
		t = t.elem
	}
	if t.kind == kRecord && t.rec.parent == r && t.rec.member == f.name {
		return t.rec
	}
	return nil
}

// declareRecord declares the Go names of r and of its nested records.
func (g *gen) declareRecord(r *record) {
	g.declare(g.recNames[r], "a struct or union")
	for _, f := range r.fields {
		if in := g.inner(r, f); in != nil {
			g.declareRecord(in)
		}
	}
}

// typeName is the Go spelling of a C type.
func (g *gen) typeName(t *ctype) string {
	switch t.kind {
	case kBuiltin:
		b := builtins[t.name]
		if b.goType == "" {
			g.failf("void used as a value type")
		}
		g.usesLong = g.usesLong || b.long
		return b.goType
	case kNamed:
		if f, ok := g.h.foreign[t.name]; ok {
			return f
		}
		td := g.h.typedefs[t.name]
		if g.transparent(td) {
			return builtins[td.typ.name].goType
		}
		return g.goName(t.name)
	case kPointer:
		r, err := resolve(g.h, t.elem)
		switch {
		case err != nil:
			g.failf("%v", err)
		case r.kind == kBuiltin && r.name == "void":
			return "unsafe.Pointer"
		case r.kind == kFunc:
			return "uintptr"
		case r.kind == kRecord && !r.rec.defined && t.elem.kind == kRecord:
			g.failf("pointer to incomplete struct %s outside a typedef", r.rec.tag)
		}
		return "*" + g.typeName(t.elem)
	case kArray:
		if _, align, _ := sizeAlign(g.h, t.elem); align > maxGoAlign {
			g.failf("array of a type aligned to %d bytes", align)
		}
		return fmt.Sprintf("[%d]%s", t.len, g.typeName(t.elem))
	case kRecord:
		return g.recNames[t.rec]
	case kEnum:
		if name, ok := g.enumNames[t.enum]; ok {
			return name
		}
		if t.enum.unsigned {
			return "uint32"
		}
		return "int32"
	}
	g.failf("function type used as a value")
	return ""
}
