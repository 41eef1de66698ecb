package main

import (
	"fmt"
	"strings"
)

// The layout rules are those of every target: 64-bit pointers, natural
// alignment, 4-byte enums. linux/amd64, linux/arm64 and windows/amd64 agree
// on them for everything the header declares, because the header uses no
// plain long (refused by the parser) and no bit-fields (refused too).

// ptrSize is the size and alignment of a pointer.
const ptrSize = 8

// maxGoAlign is the largest alignment a Go type can have on 64-bit targets.
const maxGoAlign = 8

// resolve follows typedef names to the type they stand for.
func resolve(h *header, t *ctype) (*ctype, error) {
	for t.kind == kNamed {
		td := h.typedefs[t.name]
		if td == nil {
			return nil, fmt.Errorf("unknown type %s", t.name)
		}
		t = td.typ
	}
	return t, nil
}

// sizeAlign returns the C size and alignment of t.
func sizeAlign(h *header, t *ctype) (size, align int64, err error) {
	if t, err = resolve(h, t); err != nil {
		return 0, 0, err
	}
	switch t.kind {
	case kBuiltin:
		b := builtins[t.name]
		if b.size == 0 {
			return 0, 0, fmt.Errorf("void has no size")
		}
		return b.size, b.size, nil
	case kPointer:
		return ptrSize, ptrSize, nil
	case kEnum:
		return 4, 4, nil
	case kArray:
		size, align, err = sizeAlign(h, t.elem)
		return size * t.len, align, err
	case kRecord:
		if !t.rec.defined {
			return 0, 0, fmt.Errorf("struct %s is incomplete", t.rec.tag)
		}
		return t.rec.size, t.rec.align, nil
	}
	return 0, 0, fmt.Errorf("a function type has no size")
}

// layoutRecord sets the offsets of r's fields and r's size and alignment.
// The parser lays a record out as it closes it, so that sizeof works in
// later declarations; its member types are complete by then, as C requires.
func layoutRecord(h *header, r *record) error {
	var off int64
	r.size, r.align = 0, 1
	for _, f := range r.fields {
		size, align, err := sizeAlign(h, f.typ)
		if err != nil {
			return fmt.Errorf("member %s: %v", f.name, err)
		}
		align = max(align, f.alignas)
		if r.union {
			f.offset = 0
			r.size = max(r.size, size)
		} else {
			f.offset = alignUp(off, align)
			off = f.offset + size
			r.size = off
		}
		r.align = max(r.align, align)
	}
	if len(r.fields) == 0 {
		return fmt.Errorf("empty struct or union")
	}
	r.size = alignUp(r.size, r.align)
	return nil
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

// layoutFile writes zlayout_test.go, the table TestLayoutMatchesC checks.
func (g *gen) layoutFile() string {
	var b strings.Builder
	b.WriteString("// layoutTypes lists every struct and union with its C type expression and\n" +
		"// its Go size, alignment and field offsets, for TestLayoutMatchesC.\n" +
		"var layoutTypes = [...]layoutType{\n")
	for _, d := range g.h.decls {
		if d.rec != nil {
			g.layoutEntry(&b, d.rec)
		}
	}
	b.WriteString("}\n")
	return g.imports(b.String()) + b.String()
}

// cExpr is a C type expression for a record that has a name in Go.
func (g *gen) cExpr(r *record) string {
	switch {
	case len(r.typedefs) > 0:
		return g.definedName(r.typedefs[0])
	case r.tag != "":
		if r.union {
			return "union " + r.tag
		}
		return "struct " + r.tag
	}
	// Nested without a name: reach it through the nearest named ancestor.
	path := r.member
	a := r.parent
	for len(a.typedefs) == 0 && a.tag == "" {
		if a.member != "" {
			path = a.member + "." + path
		}
		a = a.parent
	}
	return fmt.Sprintf("__typeof__(((%s *)0)->%s)", g.cExpr(a), path)
}

// layoutEntry writes the table entries of r and of its nested named
// records. Anonymous members are not entries of their own: their members
// appear in their parent's entry, as C lets one name them there.
func (g *gen) layoutEntry(b *strings.Builder, r *record) {
	name := g.recNames[r]
	calign := ""
	if r.align > maxGoAlign {
		calign = fmt.Sprintf(", CAlign: %d", r.align)
	}
	fmt.Fprintf(b, "{C: %q, Go: %q, Size: unsafe.Sizeof(%s{}), Align: unsafe.Alignof(%s{})%s, Fields: []layoutField{\n",
		g.cExpr(r), name, name, name, calign)
	g.layoutFields(b, r, name+"{}", nil)
	b.WriteString("}},\n")
	g.layoutNested(b, r)
}

// layoutNested writes the entries of the named records defined inside r,
// looking through anonymous members.
func (g *gen) layoutNested(b *strings.Builder, r *record) {
	for _, f := range r.fields {
		switch in := g.inner(r, f); {
		case in == nil:
		case f.name == "":
			g.layoutNested(b, in)
		default:
			g.layoutEntry(b, in)
		}
	}
}

// layoutFields writes the rows of r's fields. base is a Go expression of
// r's type and offset the Go terms of its offset in the table's type.
func (g *gen) layoutFields(b *strings.Builder, r *record, base string, offset []string) {
	name := g.recNames[r]
	for _, f := range r.fields {
		off := offset
		var sel, size string
		if r.union {
			sel = fmt.Sprintf("*(*%s).%s(nil)", name, g.fields[f])
			size = "unsafe.Sizeof(" + sel + ")"
			sel = "(" + sel + ")"
		} else {
			sel = base + "." + g.fields[f]
			off = append(off[:len(off):len(off)], "unsafe.Offsetof("+sel+")")
			size = "unsafe.Sizeof(" + sel + ")"
		}
		if f.name == "" {
			g.layoutFields(b, f.typ.rec, sel, off)
			continue
		}
		offExpr := strings.Join(off, " + ")
		if offExpr == "" {
			offExpr = "0"
		}
		fmt.Fprintf(b, "{C: %q, Offset: %s, Size: %s},\n", f.name, offExpr, size)
	}
}
