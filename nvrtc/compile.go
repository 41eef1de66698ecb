package nvrtc

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/purecuda/purecuda/internal/dl"
)

// Option sets how Compile compiles.
type Option func(*config)

// config is what the options set.
type config struct {
	name    string
	arch    string // CUBIN's architecture, "sm_90"; "" for PTX
	lto     bool   // LTOIR: -dlto, the image from nvrtcGetLTOIR
	ltoArch string // LTOIR's architecture, "" for NVRTC's default
	flags   []string
	headers [][2]string // include name, source
	exprs   []string
}

// Name sets the file name the source has in the log and in #line
// information; "program.cu" when not set.
func Name(name string) Option { return func(c *config) { c.name = name } }

// Flags adds NVRTC options, one per string, such as "-std=c++17",
// "-default-device", "--use_fast_math" or "-arch=compute_90" (the virtual
// architecture of the PTX).
func Flags(flags ...string) Option {
	return func(c *config) { c.flags = append(c.flags, flags...) }
}

// CUBIN makes Compile produce a cubin for one real architecture, such as
// "sm_90" (nvrtcGetCUBIN) instead of PTX: it adds -arch=arch. A device's
// own is cuda.Device.Arch (and cuda.Device.VirtualArch the "compute_90"
// that Flags("-arch=...") takes for PTX).
func CUBIN(arch string) Option { return func(c *config) { c.arch = arch } }

// LTOIR makes Compile produce LTO-IR (-dlto, nvrtcGetLTOIR), the input
// nvJitLink optimises across (package nvjitlink's LTOIR), instead of PTX,
// for the architecture arch ("compute_90" or "sm_90"; "" for NVRTC's
// default). The driver's own linker cannot take it.
func LTOIR(arch string) Option {
	return func(c *config) { c.lto, c.ltoArch = true, arch }
}

// Header supplies the source of a header the program includes by name,
// as #include "name" finds it.
func Header(name, source string) Option {
	return func(c *config) { c.headers = append(c.headers, [2]string{name, source}) }
}

// NameExpressions names kernels or variables, such as "scale<float>" or
// "&table", whose mangled (lowered) names Output.LoweredName then gives:
// the names a module's function lookup takes. Naming a template
// instantiation here also instantiates it.
func NameExpressions(exprs ...string) Option {
	return func(c *config) { c.exprs = append(c.exprs, exprs...) }
}

// Output is what a successful compile gives.
type Output struct {
	// Code is the image as a module loader (cuModuleLoadData) takes it:
	// PTX text with its terminating NUL, or a cubin.
	Code []byte
	// CUBIN reports whether Code is a cubin rather than PTX.
	CUBIN bool
	// LTOIR reports whether Code is LTO-IR (the LTOIR option), for
	// nvJitLink, rather than PTX.
	LTOIR bool
	// Log is NVRTC's log: warnings, or empty.
	Log string

	lowered map[string]string
}

// PTX returns the PTX text without its terminating NUL, or "" for a cubin
// or LTO-IR.
func (o *Output) PTX() string {
	if o.CUBIN || o.LTOIR {
		return ""
	}
	return strings.TrimSuffix(string(o.Code), "\x00")
}

// LoweredName returns the lowered (mangled) name of a name expression
// given to NameExpressions.
func (o *Output) LoweredName(expr string) (string, error) {
	n, ok := o.lowered[expr]
	if !ok {
		return "", fmt.Errorf("nvrtc: %q was not given to NameExpressions", expr)
	}
	return n, nil
}

// CompileError is the error of a compile that NVRTC refused: it carries
// the log, with the errors in the source. errors.Is(err,
// NVRTC_ERROR_COMPILATION) holds for a source with errors.
type CompileError struct {
	Log string
	Err error // "nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (6)"
}

func (e *CompileError) Error() string {
	if e.Log == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + "\n" + strings.TrimRight(e.Log, "\n\x00")
}

// Unwrap returns the NVRTC call's error.
func (e *CompileError) Unwrap() error { return e.Err }

// realArch matches a real GPU architecture: sm_90, sm_90a, sm_100f.
var realArch = regexp.MustCompile(`^sm_[1-9][0-9]*[a-z]?$`)

// anyArch matches a real or virtual architecture: sm_90, compute_90a.
var anyArch = regexp.MustCompile(`^(?:sm|compute)_[1-9][0-9]*[a-z]?$`)

// Compile compiles the CUDA C++ source src to PTX, or with CUBIN to a
// cubin, loading NVRTC on first use. Kernels meant to be found by name
// are declared extern "C", or named with NameExpressions.
//
// A source that does not compile gives a *CompileError holding the log;
// other failures name the NVRTC call.
func Compile(src string, opts ...Option) (*Output, error) {
	c := config{name: "program.cu"}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("nvrtc: Compile: nil Option")
		}
		o(&c)
	}
	if err := c.check(src); err != nil {
		return nil, fmt.Errorf("nvrtc: Compile: %w", err)
	}
	if _, err := lazy.Get(); err != nil {
		return nil, err
	}
	var prog Program
	names := cstrings(append([]string{src, c.name}, c.exprs...))
	var hdrs, incs []*byte
	for _, h := range c.headers {
		hdrs = append(hdrs, cstring(h[1]))
		incs = append(incs, cstring(h[0]))
	}
	if err := CreateProgram(&prog, names[0], names[1], int32(len(hdrs)), first(hdrs), first(incs)); err != nil {
		return nil, dl.Failed("", "nvrtcCreateProgram", err)
	}
	out, err := compile(prog, &c, names[2:])
	if derr := DestroyProgram(&prog); derr != nil {
		err = errors.Join(err, dl.Failed("", "nvrtcDestroyProgram", derr))
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// compile runs the steps between creating and destroying the program.
func compile(prog Program, c *config, exprs []*byte) (*Output, error) {
	for i, e := range exprs {
		if err := AddNameExpression(prog, e); err != nil {
			return nil, dl.Failed("", fmt.Sprintf("nvrtcAddNameExpression(%q)", c.exprs[i]), err)
		}
	}
	flags := c.flags
	if c.arch != "" {
		flags = append(flags[:len(flags):len(flags)], "-arch="+c.arch)
	}
	if c.lto {
		flags = append(flags[:len(flags):len(flags)], "-dlto")
		if c.ltoArch != "" {
			flags = append(flags, "-arch="+c.ltoArch)
		}
	}
	opts := cstrings(flags)
	cerr := CompileProgram(prog, int32(len(opts)), first(opts))
	log, err := programLog(prog)
	if err != nil {
		return nil, errors.Join(err, cerr)
	}
	if cerr != nil {
		return nil, &CompileError{Log: log, Err: dl.Failed("", "nvrtcCompileProgram", cerr)}
	}
	out := &Output{Log: log, CUBIN: c.arch != "", LTOIR: c.lto}
	switch {
	case out.LTOIR:
		out.Code, err = image(prog, GetLTOIRSize, GetLTOIR, "nvrtcGetLTOIR")
	case out.CUBIN:
		out.Code, err = image(prog, GetCUBINSize, GetCUBIN, "nvrtcGetCUBIN")
	default:
		out.Code, err = image(prog, GetPTXSize, GetPTX, "nvrtcGetPTX")
	}
	if err != nil {
		return nil, err
	}
	if len(exprs) > 0 {
		out.lowered = make(map[string]string, len(exprs))
	}
	for i, e := range exprs {
		var p *byte
		if err := GetLoweredName(prog, e, &p); err != nil {
			return nil, dl.Failed("", fmt.Sprintf("nvrtcGetLoweredName(%q)", c.exprs[i]), err)
		}
		out.lowered[c.exprs[i]] = goString(p)
	}
	return out, nil
}

// check refuses what NVRTC cannot be given.
func (c *config) check(src string) error {
	if strings.TrimSpace(src) == "" {
		return errors.New("empty source")
	}
	if c.arch != "" && !realArch.MatchString(c.arch) {
		return fmt.Errorf("CUBIN(%q): not a real architecture such as sm_90", c.arch)
	}
	if c.lto && c.arch != "" {
		return errors.New("CUBIN and LTOIR: one image at a time")
	}
	if c.lto && c.ltoArch != "" && !anyArch.MatchString(c.ltoArch) {
		return fmt.Errorf("LTOIR(%q): not an architecture such as compute_90", c.ltoArch)
	}
	type text struct{ what, s string }
	texts := []text{{"the source", src}, {"Name", c.name}}
	for _, f := range c.flags {
		if f == "" {
			return errors.New("empty flag")
		}
		texts = append(texts, text{"a flag", f})
	}
	for _, h := range c.headers {
		if h[0] == "" {
			return errors.New("header without a name")
		}
		texts = append(texts, text{"a header", h[0] + h[1]})
	}
	for _, e := range c.exprs {
		if e == "" {
			return errors.New("empty name expression")
		}
		texts = append(texts, text{"a name expression", e})
	}
	for _, t := range texts {
		if strings.IndexByte(t.s, 0) >= 0 {
			return fmt.Errorf("%s holds a NUL byte", t.what)
		}
	}
	if c.name == "" {
		return errors.New("empty Name")
	}
	return nil
}

// programLog reads the program's log.
func programLog(prog Program) (string, error) {
	var n uint64
	if err := GetProgramLogSize(prog, &n); err != nil {
		return "", dl.Failed("", "nvrtcGetProgramLogSize", err)
	}
	if n <= 1 {
		return "", nil
	}
	buf := make([]byte, n)
	if err := GetProgramLog(prog, &buf[0]); err != nil {
		return "", dl.Failed("", "nvrtcGetProgramLog", err)
	}
	return strings.TrimRight(string(buf), "\x00"), nil
}

// image reads the compiled PTX or cubin through its size and copy calls.
func image(prog Program, size func(Program, *uint64) error, get func(Program, *byte) error, what string) ([]byte, error) {
	var n uint64
	if err := size(prog, &n); err != nil {
		return nil, fmt.Errorf("%sSize: %w", what, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%sSize: empty image", what)
	}
	buf := make([]byte, n)
	if err := get(prog, &buf[0]); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return buf, nil
}

// Version returns the loaded NVRTC's version (nvrtcVersion), loading the
// library if need be: 13 and 0 for CUDA 13.0's.
func Version() (major, minor int, err error) {
	l, err := lazy.Get()
	if err != nil {
		return 0, 0, err
	}
	return l.Major, l.Minor, nil
}

// cstring copies s with a terminating NUL.
func cstring(s string) *byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return &b[0]
}

// cstrings copies each string of ss with a terminating NUL.
func cstrings(ss []string) []*byte {
	out := make([]*byte, len(ss))
	for i, s := range ss {
		out[i] = cstring(s)
	}
	return out
}

// first is the address of p's first element, or nil when p is empty.
func first(p []*byte) **byte {
	if len(p) == 0 {
		return nil
	}
	return &p[0]
}
