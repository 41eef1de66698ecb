package main

import (
	"fmt"
	"strings"
)

// defaultMacros are the predefined macros the headers are read with: a
// 64-bit GNU C11 compiler. Everything else (__CUDA_API_VERSION_INTERNAL,
// CUDA_API_PER_THREAD_DEFAULT_STREAM, _WIN32, _MSC_VER, __cplusplus,
// __DOXYGEN_ONLY__, CUDA_ENABLE_DEPRECATED) is undefined. __STDC_VERSION__
// is needed for CUtensorMap's _Alignas.
var defaultMacros = map[string]string{
	"__LP64__":         "1",
	"__GNUC__":         "4",
	"__STDC_VERSION__": "201112L",
}

// macro is a #define in effect.
type macro struct {
	params   []string // parameter names of a function-like macro
	funcLike bool
	body     []token
}

// define is an object-like #define met in active code of cuda.h; the
// candidates for Go constants.
type define struct {
	name     string
	body     []token // as written
	expanded []token // body with macros expanded at the point of definition
	late     []token // body expanded with the macros at the end of its file; nil if that failed
	pos      pos
}

// cond is one level of #if nesting.
type cond struct {
	active  bool // the current group is compiled
	taken   bool // some group of this #if has been compiled
	parent  bool // the enclosing group is compiled
	sawElse bool
}

// preprocessor expands C source into tokens of active code.
type preprocessor struct {
	macros  map[string]*macro
	defines []define
	out     []token
}

func newPreprocessor() *preprocessor {
	pp := &preprocessor{macros: map[string]*macro{}}
	for name, val := range defaultMacros {
		pp.macros[name] = &macro{body: []token{{kind: tNumber, text: val}}}
	}
	return pp
}

// run preprocesses one file, appending its active code to pp.out. With
// record set, object-like macros defined in active code are kept in
// pp.defines. #include lines are ignored: the caller reads cuda.h before
// cudaTypedefs.h.
func (pp *preprocessor) run(file, src string, record bool) error {
	lines, err := lexLines(file, src)
	if err != nil {
		return err
	}
	var (
		stack []cond
		text  []token // active code not yet expanded
		first = len(pp.defines)
	)
	active := func() bool { return len(stack) == 0 || stack[len(stack)-1].active }
	flush := func() error {
		exp, err := pp.expand(text, nil)
		pp.out = append(pp.out, exp...)
		text = nil
		return err
	}
	for _, l := range lines {
		name, ok := directive(l)
		if !ok {
			if active() {
				text = append(text, l...)
			}
			continue
		}
		at := l[0].pos
		args := l[min(2, len(l)):]
		switch name {
		case "if", "ifdef", "ifndef":
			c := cond{parent: active()}
			if c.parent {
				v, err := pp.condition(name, args, at)
				if err != nil {
					return err
				}
				c.active, c.taken = v, v
			}
			stack = append(stack, c)
		case "elif", "else":
			if len(stack) == 0 || stack[len(stack)-1].sawElse {
				return fmt.Errorf("%s: unexpected #%s", at, name)
			}
			c := &stack[len(stack)-1]
			c.active = false
			if c.parent && !c.taken {
				v := true
				if name == "elif" {
					if v, err = pp.condition("if", args, at); err != nil {
						return err
					}
				}
				c.active, c.taken = v, v
			}
			c.sawElse = name == "else"
		case "endif":
			if len(stack) == 0 {
				return fmt.Errorf("%s: unexpected #endif", at)
			}
			stack = stack[:len(stack)-1]
		default:
			if !active() {
				continue
			}
			if err := flush(); err != nil {
				return err
			}
			if err := pp.directive(name, args, at, record); err != nil {
				return err
			}
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("%s: missing #endif", file)
	}
	if err := flush(); err != nil {
		return err
	}
	for i := first; i < len(pp.defines); i++ {
		d := &pp.defines[i]
		if _, still := pp.macros[d.name]; still {
			d.late, _ = pp.expand(d.body, map[string]bool{d.name: true})
		}
	}
	return nil
}

// directive handles #define, #undef, #error and the directives that do
// not matter here.
func (pp *preprocessor) directive(name string, args []token, at pos, record bool) error {
	switch name {
	case "define":
		if len(args) == 0 || args[0].kind != tIdent {
			return fmt.Errorf("%s: bad #define", at)
		}
		m := &macro{body: args[1:]}
		if len(args) > 1 && args[1].text == "(" && !args[1].space {
			m.funcLike = true
			i := 2
			for ; i < len(args) && args[i].text != ")"; i++ {
				if args[i].kind == tIdent {
					m.params = append(m.params, args[i].text)
				} else if args[i].text != "," {
					return fmt.Errorf("%s: unsupported macro parameter %q", at, args[i].text)
				}
			}
			if i == len(args) {
				return fmt.Errorf("%s: unterminated macro parameters", at)
			}
			m.body = args[i+1:]
		}
		pp.macros[args[0].text] = m
		if record && !m.funcLike {
			// The macro's own name is not expanded again in its body, as
			// in C (cuMemPrefetchAsync is __CUDA_API_PTSZ(cuMemPrefetchAsync)).
			exp, err := pp.expand(m.body, map[string]bool{args[0].text: true})
			if err != nil {
				return err
			}
			pp.defines = append(pp.defines, define{name: args[0].text, body: m.body, expanded: exp, pos: at})
		}
	case "undef":
		if len(args) != 1 {
			return fmt.Errorf("%s: bad #undef", at)
		}
		delete(pp.macros, args[0].text)
	case "error":
		return fmt.Errorf("%s: #error %s", at, spaced(args))
	case "include", "pragma", "":
	default:
		return fmt.Errorf("%s: unsupported directive #%s", at, name)
	}
	return nil
}

// condition evaluates the condition of #if, #ifdef or #ifndef.
func (pp *preprocessor) condition(kind string, args []token, at pos) (bool, error) {
	if kind != "if" {
		if len(args) != 1 || args[0].kind != tIdent {
			return false, fmt.Errorf("%s: bad #%s", at, kind)
		}
		_, def := pp.macros[args[0].text]
		return def == (kind == "ifdef"), nil
	}
	// Replace defined X and defined(X) before expanding macros.
	var toks []token
	for i := 0; i < len(args); i++ {
		if args[i].text != "defined" {
			toks = append(toks, args[i])
			continue
		}
		paren := i+1 < len(args) && args[i+1].text == "("
		j := i + 1
		if paren {
			j++
		}
		if j >= len(args) || args[j].kind != tIdent || paren && (j+1 >= len(args) || args[j+1].text != ")") {
			return false, fmt.Errorf("%s: bad defined()", at)
		}
		v := "0"
		if _, ok := pp.macros[args[j].text]; ok {
			v = "1"
		}
		toks = append(toks, token{kind: tNumber, text: v, pos: at})
		i = j
		if paren {
			i++
		}
	}
	toks, err := pp.expand(toks, nil)
	if err != nil {
		return false, err
	}
	return ifValue(toks, at)
}

// ifValue evaluates the expanded expression of an #if.
func ifValue(toks []token, at pos) (v bool, err error) {
	defer catch(&err)
	p := &parser{toks: toks, ppExpr: true}
	if p.constExpr() != 0 {
		v = true
	}
	if !p.eof() {
		p.fail("unexpected %q in #if", p.peek().text)
	}
	return v, nil
}

// expand replaces macro invocations in toks. Macros named in disabled are
// being expanded already and are left alone, as C's rescanning rule asks.
func (pp *preprocessor) expand(toks []token, disabled map[string]bool) ([]token, error) {
	var out []token
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		m := pp.macros[t.text]
		if t.kind != tIdent || m == nil || disabled[t.text] {
			out = append(out, t)
			continue
		}
		body := m.body
		if m.funcLike {
			if i+1 >= len(toks) || toks[i+1].text != "(" {
				out = append(out, t)
				continue
			}
			args, end, err := macroArgs(toks, i+1)
			if err != nil {
				return nil, err
			}
			if len(args) != len(m.params) && !(len(m.params) == 0 && len(args) == 1 && len(args[0]) == 0) {
				return nil, fmt.Errorf("%s: %s takes %d arguments", t.pos, t.text, len(m.params))
			}
			if body, err = pp.substitute(m, args, disabled); err != nil {
				return nil, fmt.Errorf("%s: %v", t.pos, err)
			}
			i = end
		}
		inner := map[string]bool{t.text: true}
		for k := range disabled {
			inner[k] = true
		}
		placed := make([]token, len(body))
		for k, b := range body {
			b.pos = t.pos
			placed[k] = b
		}
		exp, err := pp.expand(placed, inner)
		if err != nil {
			return nil, err
		}
		out = append(out, exp...)
	}
	return out, nil
}

// macroArgs splits the arguments of a macro invocation whose "(" is at
// toks[open]. It returns them and the index of the closing ")".
func macroArgs(toks []token, open int) ([][]token, int, error) {
	var (
		args  [][]token
		cur   []token
		depth = 0
	)
	for i := open + 1; i < len(toks); i++ {
		switch t := toks[i]; {
		case t.text == "(":
			depth++
		case t.text == ")" && depth == 0:
			return append(args, cur), i, nil
		case t.text == ")":
			depth--
		case t.text == "," && depth == 0:
			args, cur = append(args, cur), nil
			continue
		}
		cur = append(cur, toks[i])
	}
	return nil, 0, fmt.Errorf("%s: unterminated macro arguments", toks[open].pos)
}

// substitute puts the arguments into a function-like macro's body and
// performs ## pasting. An argument next to ## is used as written; elsewhere
// it is macro-expanded first.
func (pp *preprocessor) substitute(m *macro, args [][]token, disabled map[string]bool) ([]token, error) {
	index := map[string]int{}
	for i, p := range m.params {
		index[p] = i
	}
	var out []token
	for i, t := range m.body {
		if t.text == "#" {
			return nil, fmt.Errorf("stringizing is not supported")
		}
		k, isParam := index[t.text]
		if !isParam || t.kind != tIdent {
			out = append(out, t)
			continue
		}
		pasted := i > 0 && m.body[i-1].text == "##" || i+1 < len(m.body) && m.body[i+1].text == "##"
		arg := args[k]
		if !pasted {
			var err error
			if arg, err = pp.expand(arg, disabled); err != nil {
				return nil, err
			}
		}
		out = append(out, arg...)
	}
	// Paste: a ## b becomes one token.
	var res []token
	for i := 0; i < len(out); i++ {
		if out[i].text == "##" && out[i].kind == tPunct {
			if len(res) == 0 || i+1 == len(out) {
				return nil, fmt.Errorf("## at the edge of a macro body")
			}
			left := &res[len(res)-1]
			left.text += out[i+1].text
			if left.kind != tIdent && !isIdentStart(left.text[0]) {
				left.kind = tNumber
			}
			i++
			continue
		}
		res = append(res, out[i])
	}
	return res, nil
}

// spaced prints tokens with white space where the source had it.
func spaced(toks []token) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 && t.space {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return b.String()
}

// cjoin prints tokens as C text: one space between tokens, except inside
// "(...)" and "[...]", before "," and ";", after "*", and between a name
// and the "(" of its parameter list.
func cjoin(toks []token) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 {
			prev := toks[i-1]
			nested := i+1 < len(toks) && toks[i+1].text == "*" // "(*name)"
			switch {
			case t.text == "," || t.text == ")" || t.text == "]" || t.text == "[" || t.text == ";":
			case prev.text == "(" || prev.text == "[" || prev.text == "*" && t.text != "const":
			case t.text == "(" && (prev.kind == tIdent && !nested || prev.text == ")"):
			default:
				b.WriteByte(' ')
			}
		}
		b.WriteString(t.text)
	}
	return b.String()
}
