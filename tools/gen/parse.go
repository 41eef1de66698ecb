package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// typeKind says what a ctype is.
type typeKind int

const (
	kBuiltin typeKind = iota // int, unsigned long long, size_t, void, ...
	kNamed                   // a typedef name
	kPointer
	kArray
	kRecord // struct or union
	kEnum
	kFunc
)

// ctype is a C type.
type ctype struct {
	kind   typeKind
	name   string   // kBuiltin: canonical C spelling; kNamed: the typedef name
	elem   *ctype   // kPointer, kArray: element type; kFunc: result type
	len    int64    // kArray: number of elements
	rec    *record  // kRecord
	enum   *enumDef // kEnum
	params []param  // kFunc
	cnst   bool     // const-qualified
}

// builtin describes a C arithmetic type on every target (all LP64 or LLP64).
type builtin struct {
	size   int64
	goType string
	float  bool
	long   bool // plain long: size is LP64's, 4 on LLP64
}

// builtins maps the canonical spelling of C's arithmetic types, and the
// <stddef.h> and <stdint.h> names the header uses, to their Go types.
var builtins = map[string]builtin{
	"void":               {0, "", false, false},
	"char":               {1, "byte", false, false},
	"signed char":        {1, "int8", false, false},
	"unsigned char":      {1, "uint8", false, false},
	"short":              {2, "int16", false, false},
	"unsigned short":     {2, "uint16", false, false},
	"int":                {4, "int32", false, false},
	"unsigned int":       {4, "uint32", false, false},
	"long":               {size: 8, goType: "CLong", long: true},
	"unsigned long":      {size: 8, goType: "CULong", long: true},
	"long long":          {8, "int64", false, false},
	"unsigned long long": {8, "uint64", false, false},
	"float":              {4, "float32", true, false},
	"double":             {8, "float64", true, false},
	"size_t":             {8, "uint64", false, false},
	"int32_t":            {4, "int32", false, false},
	"uint32_t":           {4, "uint32", false, false},
	"int64_t":            {8, "int64", false, false},
	"uint64_t":           {8, "uint64", false, false},
}

// typeWords are the keywords that spell arithmetic types.
var typeWords = map[string]bool{"void": true, "char": true, "short": true, "int": true, "long": true,
	"float": true, "double": true, "signed": true, "unsigned": true}

// record is a struct or union.
type record struct {
	union    bool
	tag      string
	fields   []*field
	defined  bool // its body has been seen
	size     int64
	align    int64
	pos      pos
	typedefs []string // names typedef'd to it directly, in order
	parent   *record  // for a record defined inside another one
	member   string   // its member name in parent; "" for an anonymous member
}

// field is a member of a record.
type field struct {
	name    string // "" for an anonymous struct or union member
	typ     *ctype
	alignas int64 // from _Alignas, 0 if none
	offset  int64
}

// enumDef is an enum type.
type enumDef struct {
	tag      string
	typedefs []string
	values   []enumValue
	unsigned bool // a value needs uint32
}

// enumValue is one enumerator.
type enumValue struct {
	name  string
	value int64
	hex   bool // written in hex or as a shift; printed in hex
}

// typedefDef is a typedef.
type typedefDef struct {
	name string
	typ  *ctype
	pos  pos
	text string // the C declaration, when it has no struct, union or enum body
}

// param is a function parameter.
type param struct {
	name string
	typ  *ctype
	text string // as written in C
}

// function is a declared entry point.
type function struct {
	symbol     string
	params     []param
	ret        *ctype // a pointer it returns; nil when it returns the library's status
	deprecated bool
	proto      string // C prototype
	pos        pos
}

// decl is one top-level declaration of the header, in header order: exactly
// one field is set.
type decl struct {
	typedef *typedefDef
	rec     *record
	enum    *enumDef
}

// header is what the generator knows about a library's headers (cuda.h
// and cudaTypedefs.h, or nvrtc.h).
type header struct {
	lib       *library // the library the headers declare
	version   string   // the CUDA version, "13.0"
	decls     []decl
	typedefs  map[string]*typedefDef
	tags      map[string]*record
	enumTags  map[string]*enumDef
	consts    map[string]int64    // enumerator values
	constEnum map[string]*enumDef // enumerator's enum
	funcs     []*function         // in header order, each symbol once
	funcBy    map[string]*function
	pfns      map[string]*typedefDef // PFN_* typedefs of cudaTypedefs.h
	defines   []define
	// foreign gives the Go spelling of the typedefs that other packages
	// declare (libtypes.DataType) or that Go has (complex64), by C name.
	foreign map[string]string
}

func newHeader() *header {
	return &header{
		typedefs:  map[string]*typedefDef{},
		tags:      map[string]*record{},
		enumTags:  map[string]*enumDef{},
		consts:    map[string]int64{},
		constEnum: map[string]*enumDef{},
		funcBy:    map[string]*function{},
		pfns:      map[string]*typedefDef{},
		foreign:   map[string]string{},
	}
}

// parser reads declarations, or one constant expression, from tokens.
type parser struct {
	toks   []token
	i      int
	h      *header
	ppExpr bool    // an #if expression: identifiers are 0, there are no types
	inline *record // the record whose body the last declSpecs parsed
	types  string  // the file whose declarations define types and functions
	result string  // the status type functions return, "CUresult"
	// foreign: the declarations are another package's; functions are
	// passed over, only the types matter.
	foreign  bool
	skip     map[string]bool // functions passed over
	skipPre  string          // and those whose names begin with it
	inParams bool            // reading a parameter list
}

// parseError carries a parse failure through panic to the entry points.
type parseError struct{ err error }

func (p *parser) fail(format string, args ...any) {
	at := pos{"<end>", 0}
	if p.i < len(p.toks) {
		at = p.toks[p.i].pos
	} else if len(p.toks) > 0 {
		at = p.toks[len(p.toks)-1].pos
	}
	panic(parseError{fmt.Errorf("%s: %s", at, fmt.Sprintf(format, args...))})
}

// catch turns a parseError panic into *err.
func catch(err *error) {
	if r := recover(); r != nil {
		pe, ok := r.(parseError)
		if !ok {
			panic(r)
		}
		*err = pe.err
	}
}

func (p *parser) eof() bool { return p.i >= len(p.toks) }

func (p *parser) peekAt(k int) token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return token{}
}

func (p *parser) peek() token { return p.peekAt(0) }

func (p *parser) next() token {
	if p.eof() {
		p.fail("unexpected end of input")
	}
	p.i++
	return p.toks[p.i-1]
}

func (p *parser) accept(text string) bool {
	if t := p.peek(); t.text == text && t.kind != tString {
		p.i++
		return true
	}
	return false
}

func (p *parser) expect(text string) {
	if !p.accept(text) {
		p.fail("expected %q, found %q", text, p.peek().text)
	}
}

func (p *parser) ident() string {
	t := p.next()
	if t.kind != tIdent {
		p.fail("expected a name, found %q", t.text)
	}
	return t.text
}

// parse reads all declarations. Types and functions must come from the
// file p.types; the other file may hold only PFN_* typedefs.
func (p *parser) parse() (err error) {
	defer catch(&err)
	for !p.eof() {
		if p.accept(";") {
			continue
		}
		if p.accept("static") {
			p.skipInline()
			continue
		}
		deprecated := p.attributes()
		p.accept("extern") // a plain declaration (nvJitLink.h's versioned entry points)
		start := p.i
		other := p.peek().pos.file != p.types
		if p.accept("typedef") {
			p.typedef(start, other)
			continue
		}
		if other {
			p.fail("unexpected declaration outside %s", p.types)
		}
		base := p.declSpecs()
		if p.inline != nil && p.inline.parent == nil && p.inline.tag != "" {
			p.h.decls = append(p.h.decls, decl{rec: p.inline})
		}
		if p.accept(";") {
			continue // a struct, union or enum on its own
		}
		name, t := p.declarator(base)
		deprecated = p.attributes() || deprecated
		end := p.i
		p.expect(";")
		if t.kind != kFunc || name == "" {
			p.fail("unsupported declaration of %q", name)
		}
		if p.foreign || p.skip[name] || (p.skipPre != "" && strings.HasPrefix(name, p.skipPre)) {
			continue
		}
		p.function(name, t, deprecated, cjoin(p.toks[start:end])+";")
	}
	return nil
}

// skipInline passes over a static (inline) function after its keyword:
// code of the header itself, not an entry point of the library.
func (p *parser) skipInline() {
	for !p.accept("{") {
		if p.next().text == ";" {
			p.fail("static declaration without a body")
		}
	}
	for depth := 1; depth > 0; {
		switch p.next().text {
		case "{":
			depth++
		case "}":
			depth--
		}
	}
}

// attributes skips __attribute__((...)) lists and reports whether one
// of them says deprecated.
func (p *parser) attributes() (deprecated bool) {
	for p.accept("__attribute__") {
		p.expect("(")
		for depth := 1; depth > 0; {
			switch t := p.next(); t.text {
			case "(":
				depth++
			case ")":
				depth--
			case "deprecated":
				deprecated = true
			}
		}
	}
	return deprecated
}

// function records a declared entry point.
func (p *parser) function(name string, t *ctype, deprecated bool, proto string) {
	var ret *ctype
	if r := t.elem; r.kind != kNamed || r.name != p.result {
		b, err := resolve(p.h, r)
		integer := p.h.lib != nil && p.h.lib.intResults && err == nil && b.kind == kBuiltin && b.name != "void" && !builtins[b.name].float
		if r.kind != kPointer && !integer {
			p.fail("%s returns something other than %s or a pointer", name, p.result)
		}
		ret = r
	}
	if prev := p.h.funcBy[name]; prev != nil {
		if len(prev.params) != len(t.params) {
			p.fail("%s declared again with %d parameters, was %d", name, len(t.params), len(prev.params))
		}
		return
	}
	f := &function{symbol: name, params: t.params, ret: ret, deprecated: deprecated, proto: proto, pos: p.toks[p.i-1].pos}
	p.h.funcs = append(p.h.funcs, f)
	p.h.funcBy[name] = f
}

// typedef reads a typedef after its keyword.
func (p *parser) typedef(start int, pfn bool) {
	at := p.peek().pos
	base := p.declSpecs()
	body := p.inline
	if body != nil && !pfn && body.parent == nil {
		p.h.decls = append(p.h.decls, decl{rec: body})
	}
	var defs []*typedefDef
	for {
		name, t := p.declarator(base)
		if name == "" {
			p.fail("typedef without a name")
		}
		defs = append(defs, &typedefDef{name: name, typ: t, pos: at})
		if t == base {
			switch base.kind {
			case kRecord:
				base.rec.typedefs = append(base.rec.typedefs, name)
			case kEnum:
				base.enum.typedefs = append(base.enum.typedefs, name)
			}
		}
		if !p.accept(",") {
			break
		}
	}
	p.expect(";")
	text := ""
	if !slices.ContainsFunc(p.toks[start:p.i], func(t token) bool { return t.text == "{" }) {
		text = cjoin(p.toks[start:p.i])
	}
	for _, td := range defs {
		td.text = text
		if pfn {
			if !strings.HasPrefix(td.name, "PFN_") || td.typ.kind != kPointer || td.typ.elem.kind != kFunc {
				p.fail("unexpected typedef %s", td.name)
			}
			p.h.pfns[td.name] = td
			continue
		}
		if p.h.typedefs[td.name] != nil {
			p.fail("typedef %s redefined", td.name)
		}
		p.h.typedefs[td.name] = td
		p.h.decls = append(p.h.decls, decl{typedef: td})
	}
}

// isTypeStart reports whether t can begin a type name.
func (p *parser) isTypeStart(t token) bool {
	if p.ppExpr || t.kind != tIdent {
		return false
	}
	switch t.text {
	case "const", "struct", "union", "enum":
		return true
	}
	_, isBuiltin := builtins[t.text]
	return typeWords[t.text] || isBuiltin || p.h.typedefs[t.text] != nil
}

// declSpecs reads declaration specifiers: qualifiers and one type.
func (p *parser) declSpecs() *ctype {
	p.inline = nil
	var (
		words []string
		t     *ctype
		cnst  bool
	)
loop:
	for {
		tok := p.peek()
		switch {
		case tok.kind != tIdent:
			break loop
		case tok.text == "const":
			p.next()
			cnst = true
		case tok.text == "volatile" || tok.text == "restrict":
			p.fail("unsupported qualifier %s", tok.text)
		case t != nil || len(words) > 0 && !typeWords[tok.text]:
			break loop
		case tok.text == "struct" || tok.text == "union":
			t = p.record()
		case tok.text == "enum":
			t = p.enum()
		case typeWords[tok.text]:
			words = append(words, p.next().text)
		case p.h.typedefs[tok.text] != nil:
			p.next()
			t = &ctype{kind: kNamed, name: tok.text}
		default:
			if _, ok := builtins[tok.text]; !ok {
				break loop
			}
			p.next()
			t = &ctype{kind: kBuiltin, name: tok.text}
		}
	}
	if len(words) > 0 {
		t = &ctype{kind: kBuiltin, name: p.arithmetic(words)}
	}
	if t == nil {
		p.fail("expected a type, found %q", p.peek().text)
	}
	if cnst {
		c := *t
		c.cnst = true
		t = &c
	}
	return t
}

// arithmetic gives the canonical spelling of an arithmetic type. Plain
// long is 8 bytes on LP64 and 4 on LLP64 (Windows): see layout.go.
func (p *parser) arithmetic(words []string) string {
	n := map[string]int{}
	for _, w := range words {
		n[w]++
	}
	sign := ""
	if n["unsigned"] > 0 {
		sign = "unsigned "
	}
	switch {
	case n["long"] > 2:
		p.fail("unsupported type %q", strings.Join(words, " "))
	case n["void"]+n["float"]+n["double"] > 0:
		if len(words) != 1 {
			p.fail("unsupported type %q", strings.Join(words, " "))
		}
		return words[0]
	case n["char"] > 0:
		if n["signed"] > 0 {
			return "signed char"
		}
		return sign + "char"
	case n["short"] > 0:
		return sign + "short"
	case n["long"] == 2:
		return sign + "long long"
	case n["long"] == 1:
		return sign + "long"
	}
	return sign + "int"
}

// record reads a struct or union specifier, with or without a body.
func (p *parser) record() *ctype {
	union := p.next().text == "union"
	at := p.peek().pos
	tag := ""
	if p.peek().kind == tIdent {
		tag = p.ident()
	}
	r := p.h.tags[tag]
	if tag == "" || r == nil {
		r = &record{union: union, tag: tag}
		if tag != "" {
			p.h.tags[tag] = r
		}
	}
	if r.union != union {
		p.fail("%s used as struct and as union", tag)
	}
	if !p.accept("{") {
		if tag == "" {
			p.fail("struct or union without tag or body")
		}
		return &ctype{kind: kRecord, rec: r}
	}
	if r.defined {
		p.fail("%s redefined", tag)
	}
	r.pos = at
	for !p.accept("}") {
		p.member(r)
	}
	r.defined = true
	if err := layoutRecord(p.h, r); err != nil {
		p.fail("%v", err)
	}
	p.inline = r
	return &ctype{kind: kRecord, rec: r}
}

// member reads one member declaration of r.
func (p *parser) member(r *record) {
	var alignas int64
	if p.accept("_Alignas") {
		p.expect("(")
		alignas = p.constExpr()
		p.expect(")")
	}
	base := p.declSpecs()
	inner := p.inline
	if inner != nil {
		inner.parent = r
	}
	if p.accept(";") {
		if inner == nil || inner.tag != "" {
			p.fail("member declaration declares nothing")
		}
		r.fields = append(r.fields, &field{typ: base, alignas: alignas})
		return
	}
	for {
		name, t := p.declarator(base)
		if name == "" {
			p.fail("member without a name")
		}
		if p.peek().text == ":" {
			p.fail("bit-field %s is not supported", name)
		}
		if inner != nil && inner.member == "" {
			inner.member = name
		}
		r.fields = append(r.fields, &field{name: name, typ: t, alignas: alignas})
		if !p.accept(",") {
			break
		}
	}
	p.expect(";")
}

// enum reads an enum specifier, with or without a body.
func (p *parser) enum() *ctype {
	p.next()
	tag := ""
	if p.peek().kind == tIdent {
		tag = p.ident()
	}
	if !p.accept("{") {
		e := p.h.enumTags[tag]
		if e == nil {
			p.fail("unknown enum %q", tag)
		}
		return &ctype{kind: kEnum, enum: e}
	}
	e := &enumDef{tag: tag}
	if tag != "" {
		if p.h.enumTags[tag] != nil {
			p.fail("enum %s redefined", tag)
		}
		p.h.enumTags[tag] = e
	}
	var next int64
	for !p.accept("}") {
		name := p.ident()
		v := enumValue{name: name, value: next}
		if p.accept("=") {
			start := p.i
			v.value = p.constExpr()
			for _, t := range p.toks[start:p.i] {
				v.hex = v.hex || t.text == "<<" || t.kind == tNumber && strings.HasPrefix(strings.ToLower(t.text), "0x")
			}
		}
		if _, dup := p.h.consts[name]; dup {
			p.fail("enumerator %s redefined", name)
		}
		e.values = append(e.values, v)
		p.h.consts[name] = v.value
		p.h.constEnum[name] = e
		next = v.value + 1
		if !p.accept(",") {
			p.expect("}")
			break
		}
	}
	for _, v := range e.values {
		switch {
		case v.value > math.MaxUint32 || v.value < math.MinInt32:
			p.fail("enumerator %s = %d does not fit in 32 bits", v.name, v.value)
		case v.value > math.MaxInt32:
			e.unsigned = true
		}
	}
	for _, v := range e.values {
		if e.unsigned && v.value < 0 {
			p.fail("enum %s mixes negative values with values above 2^31", tag)
		}
	}
	p.h.decls = append(p.h.decls, decl{enum: e})
	return &ctype{kind: kEnum, enum: e}
}

// declarator reads a possibly abstract declarator and returns the declared
// name ("" if abstract) and type.
func (p *parser) declarator(base *ctype) (string, *ctype) {
	for p.accept("*") {
		base = &ctype{kind: kPointer, elem: base}
		base.cnst = p.accept("const")
	}
	if p.peek().text == "(" && p.peekAt(1).text == "*" {
		// A nested declarator such as (*name)(params): the nested part
		// applies to the type that the suffixes after ")" build.
		p.next()
		hole := &ctype{}
		name, t := p.declarator(hole)
		p.expect(")")
		*hole = *p.suffixes(base)
		return name, t
	}
	name := ""
	if t := p.peek(); t.kind == tIdent && !p.isTypeStart(t) {
		name = p.ident()
	}
	return name, p.suffixes(base)
}

// suffixes reads array and function suffixes of a declarator.
func (p *parser) suffixes(base *ctype) *ctype {
	switch {
	case p.accept("["):
		if p.accept("]") {
			if !p.inParams {
				p.fail("array without a size")
			}
			// A parameter T x[]: a pointer, as params makes every array.
			return &ctype{kind: kArray, len: 0, elem: p.suffixes(base)}
		}
		n := p.constExpr()
		p.expect("]")
		if n <= 0 {
			p.fail("array size %d", n)
		}
		return &ctype{kind: kArray, len: n, elem: p.suffixes(base)}
	case p.accept("("):
		return &ctype{kind: kFunc, elem: base, params: p.params()}
	}
	return base
}

// params reads a parameter list after its "(".
func (p *parser) params() []param {
	if p.accept(")") || p.peek().text == "void" && p.peekAt(1).text == ")" && p.accept("void") && p.accept(")") {
		return nil
	}
	var ps []param
	outer := p.inParams
	p.inParams = true
	defer func() { p.inParams = outer }()
	for {
		if p.peek().text == "..." {
			p.fail("variadic functions are not supported")
		}
		start := p.i
		name, t := p.declarator(p.declSpecs())
		if t.kind == kArray {
			t = &ctype{kind: kPointer, elem: t.elem}
		}
		ps = append(ps, param{name: name, typ: t, text: cjoin(p.toks[start:p.i])})
		if p.accept(")") {
			return ps
		}
		p.expect(",")
	}
}

// typeName reads a type name, as in a cast or sizeof.
func (p *parser) typeName() *ctype {
	name, t := p.declarator(p.declSpecs())
	if name != "" {
		p.fail("unexpected name %s in type name", name)
	}
	return t
}

// constExpr evaluates an integer constant expression.
func (p *parser) constExpr() int64 {
	c := p.binary(1)
	if p.accept("?") {
		a := p.constExpr()
		p.expect(":")
		b := p.constExpr()
		if c != 0 {
			return a
		}
		return b
	}
	return c
}

// precedence of C's binary operators.
var precedence = map[string]int{
	"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6,
	"<": 7, ">": 7, "<=": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}

// binary evaluates binary operators of at least precedence min.
func (p *parser) binary(min int) int64 {
	x := p.unary()
	for {
		op := p.peek()
		prec, ok := precedence[op.text]
		if !ok || op.kind != tPunct || prec < min {
			return x
		}
		p.next()
		y := p.binary(prec + 1)
		x = p.apply(op.text, x, y)
	}
}

func (p *parser) apply(op string, x, y int64) int64 {
	b := func(c bool) int64 {
		if c {
			return 1
		}
		return 0
	}
	switch op {
	case "||":
		return b(x != 0 || y != 0)
	case "&&":
		return b(x != 0 && y != 0)
	case "|":
		return x | y
	case "^":
		return x ^ y
	case "&":
		return x & y
	case "==":
		return b(x == y)
	case "!=":
		return b(x != y)
	case "<":
		return b(x < y)
	case ">":
		return b(x > y)
	case "<=":
		return b(x <= y)
	case ">=":
		return b(x >= y)
	case "<<":
		return x << y
	case ">>":
		return x >> y
	case "+":
		return x + y
	case "-":
		return x - y
	case "*":
		return x * y
	}
	if y == 0 {
		p.fail("division by zero")
	}
	if op == "/" {
		return x / y
	}
	return x % y
}

// unary evaluates unary operators, casts, sizeof and primary expressions.
func (p *parser) unary() int64 {
	t := p.next()
	switch {
	case t.text == "-" && t.kind == tPunct:
		return -p.unary()
	case t.text == "+" && t.kind == tPunct:
		return p.unary()
	case t.text == "~":
		return ^p.unary()
	case t.text == "!":
		if p.unary() == 0 {
			return 1
		}
		return 0
	case t.text == "sizeof":
		p.expect("(")
		if !p.isTypeStart(p.peek()) {
			p.fail("sizeof of an expression is not supported")
		}
		ty := p.typeName()
		p.expect(")")
		size, _, err := sizeAlignBoth(p.h, ty)
		if err != nil {
			p.fail("%v", err)
		}
		return size
	case t.text == "(" && p.isTypeStart(p.peek()):
		p.typeName()
		p.expect(")")
		return p.unary()
	case t.text == "(":
		v := p.constExpr()
		p.expect(")")
		return v
	case t.kind == tNumber:
		v, err := parseInt(t.text)
		if err != nil {
			p.fail("%v", err)
		}
		return v
	case t.kind == tIdent && p.ppExpr:
		return 0
	case t.kind == tIdent:
		v, ok := p.h.consts[t.text]
		if !ok {
			p.fail("unknown name %s in constant expression", t.text)
		}
		return v
	}
	p.i--
	p.fail("unexpected %q in constant expression", t.text)
	return 0
}

// parseInt parses a C integer literal.
func parseInt(s string) (int64, error) {
	digits := strings.TrimRight(s, "uUlL")
	if len(digits) > 1 && digits[0] == '0' && digits[1] != 'x' && digits[1] != 'X' {
		digits = "0o" + digits[1:]
	}
	u, err := strconv.ParseUint(digits, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("bad integer literal %q", s)
	}
	return int64(u), nil
}
