package cuda

import (
	"strconv"
	"strings"
)

// Demangle returns the C++ name that an Itanium-ABI mangled name (as nvcc
// gives C++ kernels) stands for, written as c++filt writes it, without the
// return type: "_ZN3ops6offsetEPffy" gives "ops::offset(float*, float,
// unsigned long long)". It reads what kernel names need: namespaces,
// templates with type and integer arguments, builtin types, pointers,
// references, const and volatile, substitutions. For other names
// (extern "C" ones, or constructs it does not read) it returns false.
func Demangle(name string) (string, bool) {
	if !strings.HasPrefix(name, "_Z") {
		return "", false
	}
	d := demangler{s: name, i: 2}
	out, ok := d.encoding()
	if !ok || d.i != len(d.s) {
		return "", false
	}
	return out, true
}

type demangler struct {
	s       string
	i       int
	subs    []string // substitution candidates, in order
	targs   []string // template arguments of the function, for T_
	lastTpl []string // template arguments most recently read
}

func (d *demangler) peek() byte {
	if d.i < len(d.s) {
		return d.s[d.i]
	}
	return 0
}

func (d *demangler) eat(prefix string) bool {
	if strings.HasPrefix(d.s[d.i:], prefix) {
		d.i += len(prefix)
		return true
	}
	return false
}

// encoding ::= <name> <bare-function-type>
func (d *demangler) encoding() (string, bool) {
	name, isTemplate, ok := d.name()
	if !ok {
		return "", false
	}
	if isTemplate {
		d.targs = d.lastTpl
		// A template function's return type comes first.
		if _, ok := d.typ(); !ok {
			return "", false
		}
	}
	var params []string
	for d.i < len(d.s) {
		t, ok := d.typ()
		if !ok {
			return "", false
		}
		params = append(params, t)
	}
	if len(params) == 0 {
		return "", false // a function has at least one type: void for none
	}
	if len(params) == 1 && params[0] == "void" {
		params = nil
	}
	return name + "(" + strings.Join(params, ", ") + ")", true
}

// name ::= <nested-name> | St <unqualified-name> | <unqualified-name> [<template-args>]
func (d *demangler) name() (string, bool, bool) {
	if d.eat("N") {
		return d.nested()
	}
	prefix := ""
	if d.eat("St") {
		prefix = "std::"
	}
	n, ok := d.sourceName()
	if !ok {
		return "", false, false
	}
	n = prefix + n
	if d.peek() == 'I' {
		d.subs = append(d.subs, n)
		args, ok := d.templateArgs()
		if !ok {
			return "", false, false
		}
		return n + args, true, true
	}
	return n, false, true
}

// nested-name ::= N [<CV-qualifiers>] <prefix components> E
func (d *demangler) nested() (string, bool, bool) {
	for d.peek() == 'r' || d.peek() == 'V' || d.peek() == 'K' {
		d.i++ // qualifiers of a member function: kernels have none that matter
	}
	var cur string
	isTemplate := false
	first := true
	for !d.eat("E") {
		switch {
		case d.peek() == 'I':
			if first {
				return "", false, false
			}
			args, ok := d.templateArgs()
			if !ok {
				return "", false, false
			}
			cur += args
			isTemplate = true
		case d.peek() == 'S':
			if !first {
				return "", false, false
			}
			s, ok := d.substitution()
			if !ok {
				return "", false, false
			}
			cur = s
			first = false
			continue // a substitution is not added again
		default:
			n, ok := d.sourceName()
			if !ok {
				return "", false, false
			}
			if !first {
				cur += "::"
			}
			cur += n
			isTemplate = false
		}
		first = false
		if d.peek() != 'E' {
			d.subs = append(d.subs, cur)
		}
	}
	return cur, isTemplate, !first
}

// source-name ::= <length> <identifier>
func (d *demangler) sourceName() (string, bool) {
	j := d.i
	for j < len(d.s) && d.s[j] >= '0' && d.s[j] <= '9' {
		j++
	}
	if j == d.i {
		return "", false
	}
	n, err := strconv.Atoi(d.s[d.i:j])
	if err != nil || n <= 0 || j+n > len(d.s) {
		return "", false
	}
	d.i = j + n
	id := d.s[j:d.i]
	if strings.HasPrefix(id, "_GLOBAL__N") {
		return "(anonymous namespace)", true
	}
	return id, true
}

// template-args ::= I <template-arg>+ E
func (d *demangler) templateArgs() (string, bool) {
	if !d.eat("I") {
		return "", false
	}
	var args []string
	for !d.eat("E") {
		if d.i >= len(d.s) {
			return "", false
		}
		var a string
		var ok bool
		if d.peek() == 'L' {
			a, ok = d.literal()
		} else {
			a, ok = d.typ()
		}
		if !ok {
			return "", false
		}
		args = append(args, a)
	}
	d.lastTpl = args
	s := "<" + strings.Join(args, ", ")
	if strings.HasSuffix(s, ">") {
		s += " "
	}
	return s + ">", true
}

// literal ::= L <type> <value number> E
func (d *demangler) literal() (string, bool) {
	d.i++ // L
	if d.eat("_Z") {
		return "", false // an external name: not read
	}
	b := d.peek()
	t, ok := builtin(b)
	if !ok {
		return "", false
	}
	d.i++
	neg := d.eat("n")
	j := d.i
	for j < len(d.s) && d.s[j] >= '0' && d.s[j] <= '9' {
		j++
	}
	if j == d.i || j >= len(d.s) || d.s[j] != 'E' {
		return "", false
	}
	v := d.s[d.i:j]
	d.i = j + 1
	if neg {
		v = "-" + v
	}
	switch b {
	case 'b':
		if v == "0" {
			return "false", true
		}
		return "true", true
	case 'i':
		return v, true
	case 'j':
		return v + "u", true
	case 'l':
		return v + "l", true
	case 'm':
		return v + "ul", true
	case 'x':
		return v + "ll", true
	case 'y':
		return v + "ull", true
	}
	return "(" + t + ")" + v, true
}

// builtin types by their code.
func builtin(b byte) (string, bool) {
	switch b {
	case 'v':
		return "void", true
	case 'w':
		return "wchar_t", true
	case 'b':
		return "bool", true
	case 'c':
		return "char", true
	case 'a':
		return "signed char", true
	case 'h':
		return "unsigned char", true
	case 's':
		return "short", true
	case 't':
		return "unsigned short", true
	case 'i':
		return "int", true
	case 'j':
		return "unsigned int", true
	case 'l':
		return "long", true
	case 'm':
		return "unsigned long", true
	case 'x':
		return "long long", true
	case 'y':
		return "unsigned long long", true
	case 'n':
		return "__int128", true
	case 'o':
		return "unsigned __int128", true
	case 'f':
		return "float", true
	case 'd':
		return "double", true
	case 'e':
		return "long double", true
	case 'g':
		return "__float128", true
	case 'z':
		return "...", true
	}
	return "", false
}

// typ reads one type.
func (d *demangler) typ() (string, bool) {
	b := d.peek()
	if t, ok := builtin(b); ok {
		d.i++
		return t, true
	}
	switch b {
	case 'D':
		if d.eat("Dh") {
			return "__half", true
		}
		if d.eat("Dn") {
			return "decltype(nullptr)", true
		}
		if d.eat("DF16_") {
			return "_Float16", true
		}
		return "", false
	case 'P', 'R', 'O', 'K', 'V', 'r':
		d.i++
		inner, ok := d.typ()
		if !ok {
			return "", false
		}
		var t string
		switch b {
		case 'P':
			t = inner + "*"
		case 'R':
			t = inner + "&"
		case 'O':
			t = inner + "&&"
		case 'K':
			t = inner + " const"
		case 'V':
			t = inner + " volatile"
		case 'r':
			t = inner + " restrict"
		}
		d.subs = append(d.subs, t)
		return t, true
	case 'T':
		t, ok := d.templateParam()
		if !ok {
			return "", false
		}
		d.subs = append(d.subs, t)
		return d.withTemplateArgs(t)
	case 'S':
		if strings.HasPrefix(d.s[d.i:], "St") {
			d.i += 2
			n, ok := d.sourceName()
			if !ok {
				return "", false
			}
			t := "std::" + n
			d.subs = append(d.subs, t)
			return d.withTemplateArgs(t)
		}
		t, ok := d.substitution()
		if !ok {
			return "", false
		}
		return d.withTemplateArgs(t)
	case 'N':
		d.i++
		t, _, ok := d.nested()
		if !ok {
			return "", false
		}
		d.subs = append(d.subs, t)
		return t, true
	}
	if b >= '1' && b <= '9' {
		n, ok := d.sourceName()
		if !ok {
			return "", false
		}
		d.subs = append(d.subs, n)
		return d.withTemplateArgs(n)
	}
	return "", false
}

// template-param ::= T_ | T <number> _
func (d *demangler) templateParam() (string, bool) {
	d.i++ // T
	idx := 0
	if !d.eat("_") {
		j := d.i
		for j < len(d.s) && d.s[j] >= '0' && d.s[j] <= '9' {
			j++
		}
		if j == d.i || j >= len(d.s) || d.s[j] != '_' {
			return "", false
		}
		n, err := strconv.Atoi(d.s[d.i:j])
		if err != nil {
			return "", false
		}
		idx = n + 1
		d.i = j + 1
	}
	if idx >= len(d.targs) {
		return "", false
	}
	return d.targs[idx], true
}

// substitution ::= S_ | S <seq-id> _ | Sa | Sb | Ss | Si | So | Sd
func (d *demangler) substitution() (string, bool) {
	d.i++ // S
	abbrev := map[byte]string{
		'a': "std::allocator", 'b': "std::basic_string", 's': "std::string",
		'i': "std::istream", 'o': "std::ostream", 'd': "std::iostream",
	}
	if t, ok := abbrev[d.peek()]; ok {
		d.i++
		return t, true
	}
	idx := 0
	if !d.eat("_") {
		j := d.i
		for j < len(d.s) && (d.s[j] >= '0' && d.s[j] <= '9' || d.s[j] >= 'A' && d.s[j] <= 'Z') {
			j++
		}
		if j == d.i || j >= len(d.s) || d.s[j] != '_' {
			return "", false
		}
		n, err := strconv.ParseInt(d.s[d.i:j], 36, 32)
		if err != nil {
			return "", false
		}
		idx = int(n) + 1
		d.i = j + 1
	}
	if idx >= len(d.subs) {
		return "", false
	}
	return d.subs[idx], true
}

// normalize makes two spellings of one C++ name compare equal: single
// spaces, none beside punctuation, a leading "void " (a kernel's return
// type) dropped, and "const T" written "T const" as c++filt does.
func normalize(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.TrimPrefix(s, "void ")
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' && (i > 0 && isPunct(s[i-1]) || i+1 < len(s) && isPunct(s[i+1])) {
			continue
		}
		b.WriteByte(c)
	}
	s = b.String()
	// "const float*" -> "float const*", in each parameter.
	open := strings.IndexByte(s, '(')
	if open < 0 || !strings.HasSuffix(s, ")") {
		return s
	}
	params := splitTop(s[open+1 : len(s)-1])
	for i, p := range params {
		if rest, ok := strings.CutPrefix(p, "const "); ok {
			j := strings.IndexAny(rest, "*&")
			if j < 0 {
				j = len(rest)
			}
			params[i] = rest[:j] + " const" + rest[j:]
		}
	}
	return s[:open+1] + strings.Join(params, ",") + ")"
}

func isPunct(c byte) bool { return strings.IndexByte("*&,()<>[]:", c) >= 0 }

// splitTop splits a parameter list at the commas outside brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<', '(', '[':
			depth++
		case '>', ')', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if s != "" {
		out = append(out, s[start:])
	}
	return out
}

// withoutParams drops the parameter list of a demangled function name.
func withoutParams(s string) string {
	depth := 0
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case ')':
			depth++
		case '(':
			depth--
			if depth == 0 {
				return s[:i]
			}
		}
	}
	return s
}

// withoutTemplateArgs drops the template arguments at the end of a name.
func withoutTemplateArgs(s string) string {
	if !strings.HasSuffix(strings.TrimSpace(s), ">") {
		return s
	}
	depth := 0
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case '>':
			depth++
		case '<':
			depth--
			if depth == 0 {
				return s[:i]
			}
		}
	}
	return s
}

// withTemplateArgs appends the template arguments that may follow the type
// or name t, and records the instantiation as a substitution candidate.
func (d *demangler) withTemplateArgs(t string) (string, bool) {
	if d.peek() != 'I' {
		return t, true
	}
	args, ok := d.templateArgs()
	if !ok {
		return "", false
	}
	t += args
	d.subs = append(d.subs, t)
	return t, true
}
