package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
)

// A ModuleOption is a JIT option for LoadModule and the Linker: how the
// driver compiles PTX (and LTO input) to machine code for the device. A
// cubin is loaded as it is.
type ModuleOption func(*jitOptions) error

// jitOptions is what the options ask for, as CUjit_option ids and values.
type jitOptions struct {
	ids  []libcuda.Jit_option
	vals []uintptr
}

func (o *jitOptions) add(id libcuda.Jit_option, v uintptr) {
	o.ids = append(o.ids, id)
	o.vals = append(o.vals, v)
}

// OptimizationLevel sets the JIT's optimisation level, 0 to 4 (4, the
// highest, is the default) (CU_JIT_OPTIMIZATION_LEVEL).
func OptimizationLevel(n int) ModuleOption {
	return func(o *jitOptions) error {
		if n < 0 || n > 4 {
			return fmt.Errorf("OptimizationLevel(%d): not 0 to 4", n)
		}
		o.add(libcuda.CU_JIT_OPTIMIZATION_LEVEL, uintptr(n))
		return nil
	}
}

// MaxRegisters caps the registers a thread of the module's kernels may use
// (CU_JIT_MAX_REGISTERS).
func MaxRegisters(n int) ModuleOption {
	return func(o *jitOptions) error {
		if n <= 0 || n > 255 {
			return fmt.Errorf("MaxRegisters(%d): not 1 to 255", n)
		}
		o.add(libcuda.CU_JIT_MAX_REGISTERS, uintptr(n))
		return nil
	}
}

// GenerateLineInfo keeps the PTX's line information in the machine code,
// for profilers (CU_JIT_GENERATE_LINE_INFO).
func GenerateLineInfo() ModuleOption {
	return func(o *jitOptions) error {
		o.add(libcuda.CU_JIT_GENERATE_LINE_INFO, 1)
		return nil
	}
}

// GenerateDebugInfo keeps debug information (CU_JIT_GENERATE_DEBUG_INFO).
func GenerateDebugInfo() ModuleOption {
	return func(o *jitOptions) error {
		o.add(libcuda.CU_JIT_GENERATE_DEBUG_INFO, 1)
		return nil
	}
}

// archNumber reads "sm_90", "compute_90" or "90".
var archNumber = regexp.MustCompile(`^(?:sm_|compute_)?([1-9][0-9]*)$`)

// Target compiles for the architecture arch ("sm_90", "compute_90")
// instead of the context's device (CU_JIT_TARGET).
func Target(arch string) ModuleOption {
	return func(o *jitOptions) error {
		m := archNumber.FindStringSubmatch(arch)
		if m == nil {
			return fmt.Errorf("Target(%q): not an architecture such as sm_90", arch)
		}
		n, _ := strconv.Atoi(m[1])
		o.add(libcuda.CU_JIT_TARGET, uintptr(n))
		return nil
	}
}

// jitLogBytes is the size of each log buffer the JIT is given.
const jitLogBytes = 16 << 10

// jitCall is one driver call with JIT options, and the logs it wrote.
type jitCall struct {
	ids      []libcuda.Jit_option
	vals     []uintptr // the option values as the driver sees them (integers, and the logs' addresses)
	info     []byte
	errLog   []byte
	infoSize int // where the driver writes the info log's length back
	errSize  int
}

// newJITCall turns opts into the driver's option arrays, with an info
// and an error log buffer.
func newJITCall(opts []ModuleOption) (*jitCall, error) {
	var o jitOptions
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("a nil ModuleOption: %w", ErrNil)
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	c := &jitCall{info: make([]byte, jitLogBytes), errLog: make([]byte, jitLogBytes)}
	c.ids = append(o.ids,
		libcuda.CU_JIT_INFO_LOG_BUFFER, libcuda.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
		libcuda.CU_JIT_ERROR_LOG_BUFFER, libcuda.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
	c.vals = append(o.vals,
		uintptr(unsafe.Pointer(&c.info[0])), jitLogBytes,
		uintptr(unsafe.Pointer(&c.errLog[0])), jitLogBytes)
	c.infoSize, c.errSize = len(c.vals)-3, len(c.vals)-1
	return c, nil
}

// args are the arrays to pass: the values array holds integers and
// addresses of log buffers that the jitCall keeps alive (heap memory does
// not move); keepAlive must follow the call.
func (c *jitCall) args() (n uint32, ids *libcuda.Jit_option, vals *unsafe.Pointer) {
	return uint32(len(c.ids)), &c.ids[0], (*unsafe.Pointer)(unsafe.Pointer(&c.vals[0]))
}

func (c *jitCall) keepAlive() { runtime.KeepAlive(c) }

// logs returns what the driver wrote: each log up to the length it wrote
// back, and its first NUL.
func (c *jitCall) logs() (info, errLog string) {
	cut := func(b []byte, n uintptr) string {
		if n > uintptr(len(b)) {
			n = uintptr(len(b))
		}
		b = b[:n]
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		return string(bytes.TrimSpace(b))
	}
	return cut(c.info, c.vals[c.infoSize]), cut(c.errLog, c.vals[c.errSize])
}

// JITError is the error of a module load or link that the driver's JIT
// refused: the call, the driver's error (errors.Is matches it, e.g.
// CUDA_ERROR_INVALID_PTX) and the JIT's logs.
type JITError struct {
	Call     string // the driver call, "cuModuleLoadDataEx"
	Err      error  // the driver's Result
	ErrorLog string // what the JIT reported as errors
	InfoLog  string // what it reported besides
}

func (e *JITError) Error() string {
	s := fmt.Sprintf("cuda: %s: %v", e.Call, e.Err)
	if e.ErrorLog != "" {
		s += "\n" + e.ErrorLog
	}
	return s
}

func (e *JITError) Unwrap() error { return e.Err }

// jitErr wraps a driver error with the logs, when there are any.
func (c *jitCall) jitErr(call string, err error) error {
	info, elog := c.logs()
	if info == "" && elog == "" {
		return driverErr(call, err)
	}
	return &JITError{Call: call, Err: err, ErrorLog: elog, InfoLog: info}
}

// LoadModuleFile is LoadModule of the file at path (PTX, cubin or
// fatbin).
func LoadModuleFile(ctx *Context, path string, opts ...ModuleOption) (*Module, error) {
	image, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cuda: LoadModuleFile: %w", err)
	}
	return LoadModule(ctx, image, opts...)
}

// Log is what the JIT reported when it compiled the module (its info log,
// CU_JIT_INFO_LOG_BUFFER): empty unless it had something to say, or for
// a cubin.
func (m *Module) Log() string {
	if m == nil || m.st == nil {
		return ""
	}
	return m.st.log
}

var errNoImage = errors.New("cuda: LoadModule: empty image")
