package cuda

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// Demangle returns the C++ function that an Itanium-ABI mangled name (as
// nvcc and NVRTC give C++ kernels) stands for, written as c++filt writes
// it but without the return type: "_ZN3ops6offsetEPffy" gives
// "ops::offset(float*, float, unsigned long long)", and
// "_Z5scaleIfEvPT_S0_y" gives "scale<float>(float*, float, unsigned long
// long)". The parsing is github.com/ianlancetaylor/demangle's (the
// demangler Go's pprof uses). For a name that is not a mangled function
// (an extern "C" kernel's, a variable's, or one that does not parse) it
// returns false.
func Demangle(name string) (string, bool) {
	sig, ok := demangleFunc(name)
	return sig.text, ok
}

// funcSig is a demangled C++ function: its text and its parameters.
type funcSig struct {
	text   string   // as Demangle gives it
	params []cParam // the parameter types, in order
}

// maxDemangled bounds the length of a demangled name (2^16 bytes): a
// short mangled name can stand for a very long one through nested
// substitutions, and a kernel's never is.
const maxDemangled = 16

// demangleFunc parses a mangled function name into its text and its
// parameter types.
func demangleFunc(name string) (sig funcSig, ok bool) {
	if !strings.HasPrefix(name, "_Z") {
		return funcSig{}, false
	}
	defer func() {
		// The library reports what it cannot parse as an error; a panic
		// would be a bug of its own, which must not take a module load
		// down with it: such a name is one Demangle cannot read.
		if recover() != nil {
			sig, ok = funcSig{}, false
		}
	}()
	opts := []demangle.Option{demangle.NoClones, demangle.MaxLength(maxDemangled)}
	a, err := demangle.ToAST(name, opts...)
	if err != nil {
		return funcSig{}, false
	}
	typed, isTyped := a.(*demangle.Typed)
	if !isTyped {
		return funcSig{}, false
	}
	ft, isFunc := typed.Type.(*demangle.FunctionType)
	if !isFunc {
		return funcSig{}, false
	}
	// A parameter list written "v" comes with no Args; a lone void that
	// came through a substitution or a template parameter stays, as the
	// library prints it ("(void)").
	args := ft.Args
	sig = funcSig{params: make([]cParam, len(args))}
	texts := make([]string, len(args))
	for i, p := range args {
		sig.params[i] = classifyParam(p, opts)
		texts[i] = sig.params[i].text
	}
	fname := demangle.ASTToString(typed.Name, opts...)
	if fname == "" {
		return funcSig{}, false
	}
	sig.text = fname + "(" + strings.Join(texts, ", ") + ")"
	if len(sig.text) > 1<<maxDemangled {
		// Each part fits the bound, the whole does not (thousands of
		// parameters): not a kernel's name, and one the library would
		// print cut short.
		return funcSig{}, false
	}
	return sig, true
}

// normalize makes two spellings of one C++ name compare equal: single
// spaces, none beside punctuation, a leading "void " (a kernel's return
// type) dropped, and each parameter type written as c++filt writes it
// (canonParam: qualifiers after what they qualify, top-level ones
// dropped, the builtin integer types by their shortest name). It is
// idempotent (FuzzDemangle): the parameters are rewritten before the
// spaces beside punctuation go.
func normalize(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	for {
		rest, ok := strings.CutPrefix(s, "void ")
		if !ok {
			break
		}
		s = rest
	}
	// Each parameter as the demangler writes it: "const float *" ->
	// "float const*", "float* const" -> "float*" (canonParam); "(void)"
	// is "()".
	if open := strings.IndexByte(s, '('); open >= 0 && strings.HasSuffix(s, ")") {
		params := splitTop(s[open+1 : len(s)-1])
		for i, p := range params {
			params[i] = canonParam(p)
		}
		if len(params) == 1 && params[0] == "void" {
			params = nil
		}
		s = s[:open+1] + strings.Join(params, ",") + ")"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' && (i > 0 && isPunct(s[i-1]) || i+1 < len(s) && isPunct(s[i+1])) {
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// constAfter writes a parameter's leading consts after the type they
// qualify: "const const T*" -> "T const const*". A parameter with no type
// before its first * or & stays as it is.
func constAfter(p string) string {
	rest, k := p, 0
	for {
		r, ok := strings.CutPrefix(rest, "const ")
		if !ok {
			break
		}
		rest, k = r, k+1
	}
	j := strings.IndexAny(rest, "*&")
	if j < 0 {
		j = len(rest)
	}
	if k == 0 || strings.TrimSpace(rest[:j]) == "" {
		return p
	}
	return strings.TrimRight(rest[:j], " ") + strings.Repeat(" const", k) + rest[j:]
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
