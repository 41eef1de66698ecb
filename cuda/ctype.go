package cuda

import (
	"slices"
	"strings"
)

// canonParam writes one parameter type of a C++ function the one way
// that the demangler writes it, so that a user's spelling of a kernel's
// parameters matches however it places its qualifiers, as C++ itself
// does:
//   - cv-qualifiers follow what they qualify ("const float*" and
//     "float const *" are "float const*"), const before volatile, each
//     once;
//   - the parameter's own top-level qualifiers are dropped, as they are
//     no part of a function's type ("float* const" is "float*", "const
//     int" is "int"), and so are restrict qualifiers there ("float*
//     __restrict__" is "float*"); a restrict further in is "restrict";
//   - the builtin integer types take their shortest name ("unsigned" is
//     "unsigned int", "long int" is "long", "signed" is "int",
//     "long unsigned long int" is "unsigned long long");
//   - "struct", "class", "union", "enum" and "typename" before a name go
//     ("const struct Vecs&" is "Vecs const&").
//
// A parameter it cannot read this way (a function pointer, an array, no
// type before its first * or &) comes back with only its leading consts
// moved (constAfter). It is idempotent.
func canonParam(p string) string {
	p = strings.TrimSpace(p)
	if strings.ContainsAny(p, "()[]") {
		return constAfter(p)
	}
	toks, ok := ctypeTokens(p)
	if !ok {
		return constAfter(p)
	}
	// Levels: the base type, then one for each * or & with the
	// qualifiers that follow it.
	type level struct {
		op    string // "", "*", "&" or "&&"
		quals []string
	}
	var words []string
	levels := []level{{}}
	for _, tk := range toks {
		switch tk {
		case "*", "&", "&&":
			levels = append(levels, level{op: tk})
		case "const", "volatile":
			levels[len(levels)-1].quals = append(levels[len(levels)-1].quals, tk)
		case "restrict", "__restrict", "__restrict__":
			levels[len(levels)-1].quals = append(levels[len(levels)-1].quals, "restrict")
		case "struct", "class", "union", "enum", "typename":
			// An elaborated type names the same type as its name alone.
			if len(levels) > 1 {
				return constAfter(p)
			}
		default:
			if len(levels) > 1 {
				return constAfter(p) // a name after a *: a parameter's name, or not a type
			}
			words = append(words, tk)
		}
	}
	if len(words) == 0 {
		return constAfter(p)
	}
	levels[len(levels)-1].quals = nil // the parameter's own: no part of the type
	var b strings.Builder
	b.WriteString(builtinName(words))
	for i, l := range levels {
		if i > 0 {
			b.WriteString(l.op)
		}
		for _, q := range []string{"const", "volatile", "restrict"} {
			if slices.Contains(l.quals, q) {
				b.WriteString(" " + q)
			}
		}
	}
	return b.String()
}

// ctypeTokens splits a type into words (a name with its template
// arguments, kept whole: "A<int, float>") and *, & and &&.
func ctypeTokens(p string) ([]string, bool) {
	var toks []string
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == ' ':
			i++
		case c == '*':
			toks = append(toks, "*")
			i++
		case c == '&':
			if i+1 < len(p) && p[i+1] == '&' {
				toks = append(toks, "&&")
				i += 2
			} else {
				toks = append(toks, "&")
				i++
			}
		case isIdent(c) || c == ':':
			j := i
			for j < len(p) && (isIdent(p[j]) || p[j] == ':') {
				j++
			}
			// Template arguments belong to the name before them.
			for j < len(p) && p[j] == '<' {
				depth := 0
				k := j
				for ; k < len(p); k++ {
					if p[k] == '<' {
						depth++
					} else if p[k] == '>' {
						depth--
						if depth == 0 {
							break
						}
					}
				}
				if k == len(p) {
					return nil, false
				}
				j = k + 1
				for j < len(p) && (isIdent(p[j]) || p[j] == ':') { // A<int>::B
					j++
				}
			}
			toks = append(toks, p[i:j])
			i = j
		default:
			return nil, false
		}
	}
	return toks, true
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// builtinName writes the words of a base type: the builtin integer types
// by their shortest name (as the demangler writes them), anything else
// as it is.
func builtinName(words []string) string {
	var signed, unsigned, short, char bool
	long := 0
	for _, w := range words {
		switch w {
		case "signed":
			signed = true
		case "unsigned":
			unsigned = true
		case "short":
			short = true
		case "long":
			long++
		case "char":
			char = true
		case "int":
		default:
			if w == "double" && long == 1 && len(words) == 2 {
				return "long double"
			}
			return strings.Join(words, " ")
		}
	}
	prefix := ""
	if unsigned {
		prefix = "unsigned "
	}
	switch {
	case signed && unsigned, char && (short || long > 0), short && long > 0, long > 2:
		return strings.Join(words, " ") // not a type: left alone
	case char:
		if signed {
			return "signed char"
		}
		return prefix + "char"
	case short:
		return prefix + "short"
	case long == 2:
		return prefix + "long long"
	case long == 1:
		return prefix + "long"
	default:
		return prefix + "int"
	}
}
