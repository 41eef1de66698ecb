package nvjitlink

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"unsafe"

	"github.com/purecuda/purecuda/internal/dl"
)

// Input is one piece of a link: its kind, a name for the logs, and its
// bytes.
type Input struct {
	Type InputType // NVJITLINK_INPUT_PTX, _LTOIR, _CUBIN, _FATBIN, ...
	Name string    // for the logs; "" for "input N"
	Data []byte
}

// PTX is PTX text to link (compiled for the link's architecture).
func PTX(name string, ptx []byte) Input {
	return Input{Type: NVJITLINK_INPUT_PTX, Name: name, Data: ptx}
}

// LTOIR is NVRTC's (or nvcc -dlto's) LTO intermediate representation, as
// nvrtc.LTOIR makes it: its code is optimised with the link's other LTO
// inputs.
func LTOIR(name string, ir []byte) Input {
	return Input{Type: NVJITLINK_INPUT_LTOIR, Name: name, Data: ir}
}

// Cubin is machine code for the link's architecture.
func Cubin(name string, cubin []byte) Input {
	return Input{Type: NVJITLINK_INPUT_CUBIN, Name: name, Data: cubin}
}

// Fatbin is a fat binary, from which the link takes what fits.
func Fatbin(name string, fatbin []byte) Input {
	return Input{Type: NVJITLINK_INPUT_FATBIN, Name: name, Data: fatbin}
}

// LinkError is the error of a link that nvJitLink refused: the call, its
// Result (errors.Is matches it) and the logs.
type LinkError struct {
	Call     string // "nvJitLinkComplete"
	Err      error  // the Result
	ErrorLog string
	InfoLog  string
}

func (e *LinkError) Error() string {
	s := fmt.Sprintf("nvjitlink: %s: %v", e.Call, e.Err)
	if e.ErrorLog != "" {
		s += "\n" + e.ErrorLog
	}
	return s
}

func (e *LinkError) Unwrap() error { return e.Err }

// Output is what a link gives: a cubin, or PTX when the link was asked
// for it (PTXOutput).
type Output struct {
	Cubin   []byte // the linked machine code, for cuda.LoadModule; nil after PTXOutput
	PTX     []byte // the linked PTX (nvJitLinkGetLinkedPtx) after PTXOutput, for cuda.LoadModule too; nil otherwise
	InfoLog string // nvJitLink's info log, often empty
}

// realArch matches a real architecture: sm_90, sm_90a, sm_100f.
var realArch = regexp.MustCompile(`^sm_[1-9][0-9]*[a-z]?$`)

// Link links the inputs into one cubin for the real architecture arch
// ("sm_90", as cuda.Device.Arch gives it), loading nvJitLink on first use,
// or into PTX with PTXOutput. options are made by Optimize, LineInfo,
// PTXOutput and the others of option.go (Flag for one they do not cover);
// "-arch=" comes from arch, and LTO is added when an input is LTO-IR. A
// link that fails gives a *LinkError with nvJitLink's error log.
func Link(arch string, inputs []Input, options ...Option) (*Output, error) {
	if !realArch.MatchString(arch) {
		return nil, fmt.Errorf("nvjitlink: Link: %q is not a real architecture such as sm_90", arch)
	}
	if len(inputs) == 0 {
		return nil, errors.New("nvjitlink: Link: no inputs")
	}
	lto := false
	for i, in := range inputs {
		if len(in.Data) == 0 {
			return nil, fmt.Errorf("nvjitlink: Link: input %d (%q) is empty", i, in.Name)
		}
		if strings.IndexByte(in.Name, 0) >= 0 {
			return nil, fmt.Errorf("nvjitlink: Link: input %d's name holds a NUL byte", i)
		}
		lto = lto || in.Type == NVJITLINK_INPUT_LTOIR
	}
	opts := []string{"-arch=" + arch}
	for _, o := range options {
		if o.err != nil {
			return nil, fmt.Errorf("nvjitlink: Link: %w", o.err)
		}
		if o.flag != "" {
			opts = append(opts, o.flag)
		}
	}
	if lto && !contains(opts, "-lto") {
		opts = append(opts, "-lto")
	}
	ptx := contains(opts, "-ptx")
	if err := Load(); err != nil {
		return nil, err
	}
	copts := make([]*byte, len(opts))
	for i, o := range opts {
		copts[i] = cstring(o)
	}
	var h Handle
	if err := Create(&h, uint32(len(copts)), &copts[0]); err != nil {
		runtime.KeepAlive(copts)
		return nil, dl.Failed("nvjitlink", fmt.Sprintf("nvJitLinkCreate(%s)", strings.Join(opts, " ")), err)
	}
	runtime.KeepAlive(copts)
	out, err := link(h, inputs, ptx)
	if derr := Destroy(&h); derr != nil {
		err = errors.Join(err, dl.Failed("nvjitlink", "nvJitLinkDestroy", derr))
	}
	return out, err
}

// link runs the steps between creating and destroying the handle; ptx
// says the link makes PTX rather than a cubin.
func link(h Handle, inputs []Input, ptx bool) (*Output, error) {
	fail := func(call string, err error) error {
		elog, _ := readLog(h, GetErrorLogSize, GetErrorLog)
		info, _ := readLog(h, GetInfoLogSize, GetInfoLog)
		return &LinkError{Call: call, Err: err, ErrorLog: elog, InfoLog: info}
	}
	for i, in := range inputs {
		name := in.Name
		if name == "" {
			name = fmt.Sprintf("input %d", i)
		}
		cname := cstring(name)
		err := AddData(h, in.Type, unsafe.Pointer(&in.Data[0]), uint64(len(in.Data)), cname)
		runtime.KeepAlive(in.Data)
		runtime.KeepAlive(cname)
		if err != nil {
			return nil, fail(fmt.Sprintf("nvJitLinkAddData(%s)", name), err)
		}
	}
	if err := Complete(h); err != nil {
		return nil, fail("nvJitLinkComplete", err)
	}
	if ptx {
		code, err := linkedPTX(h)
		if err != nil {
			return nil, err
		}
		info, err := readLog(h, GetInfoLogSize, GetInfoLog)
		if err != nil {
			return nil, err
		}
		return &Output{PTX: code, InfoLog: info}, nil
	}
	var n uint64
	if err := GetLinkedCubinSize(h, &n); err != nil {
		return nil, dl.Failed("nvjitlink", "nvJitLinkGetLinkedCubinSize", err)
	}
	if n == 0 {
		return nil, errors.New("nvjitlink: nvJitLinkGetLinkedCubinSize: empty cubin")
	}
	cubin := make([]byte, n)
	if err := GetLinkedCubin(h, unsafe.Pointer(&cubin[0])); err != nil {
		return nil, dl.Failed("nvjitlink", "nvJitLinkGetLinkedCubin", err)
	}
	info, err := readLog(h, GetInfoLogSize, GetInfoLog)
	if err != nil {
		return nil, err
	}
	return &Output{Cubin: cubin, InfoLog: info}, nil
}

// linkedPTX reads the linked PTX, without its terminating NUL.
func linkedPTX(h Handle) ([]byte, error) {
	var n uint64
	if err := GetLinkedPtxSize(h, &n); err != nil {
		return nil, dl.Failed("nvjitlink", "nvJitLinkGetLinkedPtxSize", err)
	}
	if n <= 1 {
		return nil, errors.New("nvjitlink: nvJitLinkGetLinkedPtxSize: empty PTX")
	}
	code := make([]byte, n)
	if err := GetLinkedPtx(h, &code[0]); err != nil {
		return nil, dl.Failed("nvjitlink", "nvJitLinkGetLinkedPtx", err)
	}
	if i := bytes.IndexByte(code, 0); i >= 0 {
		code = code[:i]
	}
	return code, nil
}

// readLog reads one of the handle's logs through its size and copy calls.
func readLog(h Handle, size func(Handle, *uint64) error, get func(Handle, *byte) error) (string, error) {
	var n uint64
	if err := size(h, &n); err != nil {
		return "", fmt.Errorf("nvjitlink: reading a log's size: %w", err)
	}
	if n <= 1 {
		return "", nil
	}
	buf := make([]byte, n)
	if err := get(h, &buf[0]); err != nil {
		return "", fmt.Errorf("nvjitlink: reading a log: %w", err)
	}
	return strings.TrimSpace(strings.TrimRight(string(buf), "\x00")), nil
}

// Version is the loaded nvJitLink's version (nvJitLinkVersion), loading
// the library if need be: 13 and 0 for CUDA 13.0's.
func Version() (major, minor int, err error) {
	if err := Load(); err != nil {
		return 0, 0, err
	}
	l, _ := Loaded()
	return l.Major, l.Minor, nil
}

func cstring(s string) *byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return &b[0]
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
