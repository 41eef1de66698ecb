package main

import (
	"fmt"
	"strings"
)

// The layout rules are those of every target: 64-bit pointers, natural
// alignment, 4-byte enums. linux/amd64, linux/arm64 and windows/amd64 agree
// on them for everything the headers declare but plain long, which is 8
// bytes on LP64 (Linux) and 4 on LLP64 (Windows): a record is laid out in
// both models and refused if the two differ (nvml.h's nvmlValue_t holds an
// unsigned long beside 8-byte members, the same either way), and long
// itself is spelled in Go by the package's CLong and CULong, which the
// generator defines per system (zlong_*.go). Bit-fields are refused by the
// parser.

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

// dataModel is the size of plain long: 8 on LP64, 4 on LLP64.
type dataModel int64

const (
	lp64  dataModel = 8
	llp64 dataModel = 4
)

// sizeAlign returns the C size and alignment of t on LP64, which is also
// that on LLP64 for every record (layoutRecord checks it).
func sizeAlign(h *header, t *ctype) (size, align int64, err error) {
	return sizeAlignIn(h, t, lp64)
}

// sizeAlignBoth is sizeAlign for a type that must have one size on every
// target: it fails if LP64 and LLP64 differ.
func sizeAlignBoth(h *header, t *ctype) (size, align int64, err error) {
	size, align, err = sizeAlignIn(h, t, lp64)
	if err != nil {
		return 0, 0, err
	}
	s4, a4, err := sizeAlignIn(h, t, llp64)
	if err != nil {
		return 0, 0, err
	}
	if s4 != size || a4 != align {
		return 0, 0, fmt.Errorf("its size depends on plain long (%d bytes on LP64, %d on LLP64)", size, s4)
	}
	return size, align, nil
}

// sizeAlignIn returns the C size and alignment of t in data model m.
func sizeAlignIn(h *header, t *ctype, m dataModel) (size, align int64, err error) {
	if t, err = resolve(h, t); err != nil {
		return 0, 0, err
	}
	switch t.kind {
	case kBuiltin:
		b := builtins[t.name]
		if b.size == 0 {
			return 0, 0, fmt.Errorf("void has no size")
		}
		if b.long {
			return int64(m), int64(m), nil
		}
		return b.size, b.size, nil
	case kPointer:
		return ptrSize, ptrSize, nil
	case kEnum:
		return 4, 4, nil
	case kArray:
		size, align, err = sizeAlignIn(h, t.elem, m)
		return size * t.len, align, err
	case kRecord:
		// A record is incomplete until its closing brace is laid out
		// (align stays 0 until then): a member of the record's own type
		// is C's incomplete type, not a zero-sized one.
		if !t.rec.defined || t.rec.align == 0 {
			return 0, 0, fmt.Errorf("struct %s is incomplete", t.rec.tag)
		}
		return t.rec.size, t.rec.align, nil
	}
	return 0, 0, fmt.Errorf("a function type has no size")
}

// layoutRecord sets the offsets of r's fields and r's size and alignment.
// The parser lays a record out as it closes it, so that sizeof works in
// later declarations; its member types are complete by then, as C requires.
// It fails if the layout on LLP64 differs from that on LP64.
func layoutRecord(h *header, r *record) error {
	if len(r.fields) == 0 {
		return fmt.Errorf("empty struct or union")
	}
	size, align, offsets, err := layoutIn(h, r, lp64)
	if err != nil {
		return err
	}
	size4, align4, offsets4, err := layoutIn(h, r, llp64)
	if err != nil {
		return err
	}
	for i, f := range r.fields {
		if offsets4[i] != offsets[i] {
			return fmt.Errorf("member %s is at offset %d on LP64 and %d on LLP64 (plain long)", f.name, offsets[i], offsets4[i])
		}
		f.offset = offsets[i]
	}
	if size4 != size || align4 != align {
		return fmt.Errorf("%d bytes aligned to %d on LP64, %d aligned to %d on LLP64 (plain long)", size, align, size4, align4)
	}
	r.size, r.align = size, align
	return nil
}

// layoutIn lays r out in data model m.
func layoutIn(h *header, r *record, m dataModel) (size, align int64, offsets []int64, err error) {
	var off int64
	align = 1
	for _, f := range r.fields {
		fsize, falign, err := sizeAlignIn(h, f.typ, m)
		if err != nil {
			return 0, 0, nil, fmt.Errorf("member %s: %v", f.name, err)
		}
		falign = max(falign, f.alignas)
		if r.union {
			offsets = append(offsets, 0)
			size = max(size, fsize)
		} else {
			o := alignUp(off, falign)
			offsets = append(offsets, o)
			off = o + fsize
			size = off
		}
		align = max(align, falign)
	}
	return alignUp(size, align), align, offsets, nil
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
	// (A record with neither, at the top, has no C name: typedef struct
	// { ... } *T names only a pointer to it.)
	unnamed := func(a *record) {
		if a.parent == nil {
			g.failf("%s: a struct or union without a tag or typedef of its own (only a pointer to it is named) is not supported", g.recNames[r])
		}
	}
	unnamed(r)
	path := memberPath(r)
	a := r.parent
	for len(a.typedefs) == 0 && a.tag == "" {
		unnamed(a)
		if a.member != "" {
			path = memberPath(a) + "." + path
		}
		a = a.parent
	}
	return fmt.Sprintf("__typeof__(((%s *)0)->%s)", g.cExpr(a), path)
}

// memberPath names nested record r as a member of its parent, with [0]
// for each array dimension of that member (nvml.h's
// nvmlGpuDynamicPstatesInfo_t declares utilization[8] of a struct).
func memberPath(r *record) string {
	path := r.member
	for _, f := range r.parent.fields {
		if f.name != r.member {
			continue
		}
		for t := f.typ; t.kind == kArray; t = t.elem {
			path += "[0]"
		}
	}
	return path
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
