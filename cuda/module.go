package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	gosync "sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/purecuda/purecuda/libcuda"
)

// Module is code loaded into a Context: PTX, a cubin or a fatbin. Its
// kernels are found by Func. A Module dropped without Close (and without
// a Func of it still reachable) is unloaded by the garbage collector, and
// a warning is logged.
type Module struct {
	st      *moduleState
	cleanup runtime.Cleanup
}

type moduleState struct {
	mu     gosync.RWMutex // held for reading by launches, for writing by Close
	closed bool           // with mu, on the first cache line (128 bytes: the allocator aligns it)
	ctx    *ctxState
	raw    libcuda.Module
	funcs  []funcName // nil when the driver cannot list a module's functions

	log         string            // the JIT's info log (Module.Log)
	fromLibrary bool              // a Library's module in a context (Library.Module): not unloaded by Close
	gmu         gosync.Mutex      // guards globals
	globals     map[string]*alloc // the variables Global gave out, by name
	_           [16]byte          // pad to 128 bytes
}

// funcName is one function of a module, by its entry name (mangled for
// C++ kernels) and, when the entry name is a mangled C++ name, its
// demangled name.
type funcName struct {
	raw       libcuda.Function
	entry     string
	demangled string // "" for an extern "C" name, or one the demangler does not read
}

// LoadModule loads a module image into the context (cuModuleLoadDataEx):
// PTX text (with or without a terminating NUL), a cubin or a fatbin. The
// image is not kept. The options tell the driver's JIT how to compile PTX
// (OptimizationLevel, MaxRegisters, GenerateLineInfo, Target). When the
// JIT refuses the image, the error is a *JITError with the JIT's logs
// (errors.Is matches the driver's Result, CUDA_ERROR_INVALID_PTX for bad
// PTX); Module.Log has its info log otherwise.
func LoadModule(ctx *Context, image []byte, opts ...ModuleOption) (*Module, error) {
	cst, err := ctx.live("LoadModule")
	if err != nil {
		return nil, err
	}
	if len(image) == 0 {
		return nil, errNoImage
	}
	jc, err := newJITCall(opts)
	if err != nil {
		return nil, fmt.Errorf("cuda: LoadModule: %w", err)
	}
	if image[len(image)-1] != 0 && isText(image) {
		image = append(image[:len(image):len(image)], 0)
	}
	if !cst.tryRef() {
		return nil, closedErr("Context", "LoadModule")
	}
	var raw libcuda.Module
	var funcs []funcName
	err = cst.do(func() error {
		n, ids, vals := jc.args()
		err := libcuda.ModuleLoadDataEx(&raw, unsafe.Pointer(&image[0]), n, ids, vals)
		jc.keepAlive()
		if err != nil {
			return jc.jitErr("cuModuleLoadDataEx", err)
		}
		var lerr error
		funcs, lerr = listFuncs(raw)
		if lerr != nil {
			if uerr := libcuda.ModuleUnload(raw); uerr != nil {
				lerr = errors.Join(lerr, driverErr("cuModuleUnload", uerr))
			}
		}
		return lerr
	})
	runtime.KeepAlive(image)
	if err != nil {
		return nil, errors.Join(err, cst.unref())
	}
	ms := &moduleState{ctx: cst, raw: raw, funcs: funcs}
	ms.log, _ = jc.logs()
	return newModule(ms), nil
}

// newModule wraps a loaded module, with the cleanup that closes it when
// it is dropped.
func newModule(ms *moduleState) *Module {
	m := &Module{st: ms}
	m.cleanup = runtime.AddCleanup(m, func(ms *moduleState) {
		ms.mu.RLock()
		closed := ms.closed // by its Library's Close
		ms.mu.RUnlock()
		if closed {
			return
		}
		dropped("Module", "Close")
		if err := ms.close(); err != nil && !errors.Is(err, ErrClosed) {
			logErr("unloading a dropped module", err)
		}
	}, ms)
	return m
}

// isText says whether an image is PTX text rather than a binary (an ELF
// cubin or a fatbin), which must not be changed.
func isText(b []byte) bool {
	if len(b) >= 4 && (string(b[:4]) == "\x7fELF" || string(b[:4]) == "\x50\xed\x55\xba") {
		return false
	}
	return true
}

// listFuncs lists the functions of a module (cuModuleGetFunctionCount,
// cuModuleEnumerateFunctions, cuFuncGetName). A driver without those
// calls (before CUDA 12.4) gives nil: Func then finds entry names only.
func listFuncs(m libcuda.Module) ([]funcName, error) {
	var n uint32
	if err := libcuda.ModuleGetFunctionCount(&n, m); err != nil {
		if errors.Is(err, libcuda.ErrSymbol) {
			return nil, nil
		}
		return nil, driverErr("cuModuleGetFunctionCount", err)
	}
	if n == 0 {
		return []funcName{}, nil
	}
	raws := make([]libcuda.Function, n)
	if err := libcuda.ModuleEnumerateFunctions(&raws[0], n, m); err != nil {
		return nil, driverErr("cuModuleEnumerateFunctions", err)
	}
	funcs := make([]funcName, 0, n)
	for _, f := range raws {
		var p *byte
		if err := libcuda.FuncGetName(&p, f); err != nil {
			return nil, driverErr("cuFuncGetName", err)
		}
		name := cString(p)
		d, _ := Demangle(name)
		funcs = append(funcs, funcName{raw: f, entry: name, demangled: d})
	}
	return funcs, nil
}

// cString copies the NUL-terminated string at p, owned by the driver.
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// Raw is the driver's handle of the module. Do not unload it.
func (m *Module) Raw() libcuda.Module {
	if m == nil || m.st == nil {
		return 0
	}
	return m.st.raw
}

// Funcs lists the module's functions: the demangled name of each C++
// kernel, the entry name of the others, sorted. It is empty when the
// driver cannot list them (before CUDA 12.4).
func (m *Module) Funcs() []string {
	if m == nil || m.st == nil {
		return nil
	}
	var names []string
	for _, f := range m.st.funcs {
		names = append(names, f.display())
	}
	slices.Sort(names)
	return names
}

func (f funcName) display() string {
	if f.demangled != "" {
		return f.demangled
	}
	return f.entry
}

// Func finds a kernel of the module by name and reads its parameters. The
// name is one of:
//   - the entry name: the plain name of an extern "C" kernel, or the exact
//     mangled name of a C++ one (_Z5scaleIfEvPT_S0_y);
//   - a C++ kernel's demangled name with its parameter list, as c++filt
//     prints it ("scale<float>(float*, float, unsigned long long)") or as
//     C++ would take it: spaces around punctuation, a leading "void", the
//     place and order of qualifiers ("const float *", "float const*"), a
//     parameter's own top-level const or __restrict__ ("float* const") and
//     the longer names of integer types ("unsigned long long int") do not
//     matter;
//   - a C++ kernel's qualified name without parameters ("ops::offset",
//     "scale<int>"), or without its template arguments ("scale").
//
// When the name matches several functions (overloads, template instances)
// the error matches ErrAmbiguous and lists them; when it matches none, it
// matches ErrNotFound.
func (m *Module) Func(name string) (*Func, error) {
	if m == nil || m.st == nil {
		return nil, nilErr("Module", "Func")
	}
	ms := m.st
	if !ms.mu.TryRLock() { // a Close
		return nil, closedErr("Module", "Func")
	}
	defer ms.mu.RUnlock()
	if ms.closed {
		return nil, closedErr("Module", "Func")
	}
	var raw libcuda.Function
	entry := name
	lookup := func() error { // the entry name, through the driver
		return ms.ctx.do(func() error {
			cname := append([]byte(name), 0)
			return libcuda.ModuleGetFunction(&raw, ms.raw, &cname[0])
		})
	}
	if ms.funcs == nil {
		// The driver cannot list the functions: look the entry name up.
		err := lookup()
		if errors.Is(err, libcuda.CUDA_ERROR_NOT_FOUND) {
			return nil, fmt.Errorf("cuda: Module.Func(%q): %w (this driver cannot list a module's functions: give the entry name)", name, ErrNotFound)
		}
		if err != nil {
			return nil, driverErr("cuModuleGetFunction", err)
		}
	} else {
		matches := matchFuncs(ms.funcs, name)
		switch len(matches) {
		case 0:
			// Not listed; the driver may still know the entry name.
			if err := lookup(); err != nil {
				return nil, fmt.Errorf("cuda: Module.Func(%q): %w; the module has: %s", name, ErrNotFound, strings.Join(m.Funcs(), ", "))
			}
		case 1:
			raw, entry = matches[0].raw, matches[0].entry
		default:
			var names []string
			for _, f := range matches {
				names = append(names, f.display())
			}
			slices.Sort(names)
			return nil, fmt.Errorf("cuda: Module.Func(%q): %w: it matches %s", name, ErrAmbiguous, strings.Join(names, "; "))
		}
	}
	f := &Func{mod: m, ms: ms, raw: raw, cu: ms.ctx.cu, name: entry}
	f.self = weak.Make(f)
	if d, ok := Demangle(entry); ok {
		f.display = d
	} else {
		f.display = entry
	}
	var params []uint32
	err := ms.ctx.do(func() (err error) {
		params, err = paramSizes(raw)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: Module.Func(%q): %w", name, err)
	}
	f.params = params
	if params != nil && len(params) <= smallArgs {
		f.quick = int8(len(params)) + 1
	}
	if sig, ok := demangleFunc(entry); ok && (params == nil || len(sig.params) == len(params)) {
		f.typed = sig.params
		f.accepts = make([]uint64, len(sig.params))
		for i, p := range sig.params {
			f.accepts[i] = p.accept
			if p.readOnly && i < 64 {
				f.readOnly |= 1 << i
			}
		}
	}
	return f, nil
}

// matchFuncs returns the functions that name means, trying each way of
// naming in turn and stopping at the first that matches any.
func matchFuncs(funcs []funcName, name string) []funcName {
	for _, f := range funcs {
		if f.entry == name {
			return []funcName{f}
		}
	}
	want := normalize(name)
	ways := []func(f funcName) string{
		func(f funcName) string { return normalize(f.demangled) },
		func(f funcName) string { return normalize(withoutParams(f.demangled)) },
		func(f funcName) string { return normalize(withoutTemplateArgs(withoutParams(f.demangled))) },
	}
	for _, way := range ways {
		var out []funcName
		for _, f := range funcs {
			if f.demangled != "" && way(f) == want {
				out = append(out, f)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// paramSizes reads the sizes of a kernel's parameters through
// libcuda.FuncParams. A driver without cuFuncGetParamInfo (before CUDA 12.4)
// gives nil: the launches are then not checked.
func paramSizes(f libcuda.Function) ([]uint32, error) {
	params, err := libcuda.FuncParams(f)
	if errors.Is(err, libcuda.ErrSymbol) {
		return nil, nil
	}
	if err != nil {
		return nil, driverErr("cuFuncGetParamInfo", err)
	}
	sizes := make([]uint32, len(params))
	for i, p := range params {
		sizes[i] = uint32(p.Size)
	}
	return sizes, nil
}

// Func is a kernel of a Module, with its parameters. It keeps the module
// loaded as long as it is reachable; it is unusable after Module.Close.
type Func struct {
	// What a launch reads lies in the first 64 bytes, one cache line
	// (the struct is 192 bytes: the allocator aligns it).
	ms  *moduleState // mod.st
	raw libcuda.Function
	cu  libcuda.Context // the module's context
	// readOnly has bit i set when parameter i is a pointer to const (a
	// C++ kernel's const float*, from its mangled name): the kernel only
	// reads the memory passed there. It is 0 for extern "C" kernels,
	// whose names say nothing: every pointer counts as written. It is
	// set once, by Module.Func, and read without a lock (paramReadOnly).
	readOnly uint64
	// shapes are argument shapes the full check has accepted, for the
	// quick launch (see shapeOf); quick is the number of parameters plus
	// one when there are at most smallArgs, 0 otherwise (no quick launch).
	shapes [2]atomic.Uint64
	quick  int8

	mod     *Module
	name    string             // entry name
	display string             // demangled, for errors
	params  []uint32           // sizes in bytes; nil: unknown
	typed   []cParam           // the C++ parameter types; nil for an extern "C" kernel: checked by size only
	accepts []uint64           // typed[i].accept, packed for the launch's check
	self    weak.Pointer[Func] // for the launch history, which must not keep the Func
	_       [16]byte           // pad to 192 bytes
}

// paramReadOnly says whether the kernel only reads through its parameter
// i (a pointer to const in a C++ kernel's signature). False when it may
// write, or when the kernel's name does not say (extern "C").
func (f *Func) paramReadOnly(i int) bool { return i < 64 && f.readOnly>>i&1 != 0 }

// Name is the kernel's entry name (mangled for a C++ kernel).
func (f *Func) Name() string {
	if f == nil || f.mod == nil {
		return ""
	}
	return f.name
}

// Raw is the driver's handle of the kernel.
func (f *Func) Raw() libcuda.Function {
	if f == nil || f.mod == nil {
		return 0
	}
	return f.raw
}

// Params returns the size in bytes of each of the kernel's parameters, or
// false when the driver cannot tell (before CUDA 12.4).
func (f *Func) Params() ([]int, bool) {
	if f == nil || f.params == nil {
		return nil, false
	}
	out := make([]int, len(f.params))
	for i, s := range f.params {
		out[i] = int(s)
	}
	return out, true
}

// Attribute is one of the kernel's attributes (cuFuncGetAttribute), e.g.
// CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK or
// CU_FUNC_ATTRIBUTE_NUM_REGS.
func (f *Func) Attribute(a libcuda.Function_attribute) (int, error) {
	var v int32
	err := f.do("Attribute", "cuFuncGetAttribute("+a.String()+")", func() error {
		return libcuda.FuncGetAttribute(&v, a, f.raw)
	})
	if err != nil {
		return 0, err
	}
	return int(v), nil
}

// check compares the arguments with the kernel's parameters.
func (f *Func) check(args []Arg) error {
	if len(args) > maxArgs {
		return fmt.Errorf("cuda: Launch %s: %d arguments, at most %d: %w", f.display, len(args), maxArgs, ErrArgs)
	}
	for i := range args {
		if err := args[i].argErr(); err != nil {
			return fmt.Errorf("cuda: Launch %s: argument %d: %w", f.display, i, err)
		}
	}
	if f.params == nil {
		if f.typed != nil && len(args) != len(f.typed) {
			return fmt.Errorf("cuda: Launch %s: %d arguments for %d parameters: %w", f.display, len(args), len(f.typed), ErrArgs)
		}
		return f.checkTypes(args)
	}
	if len(args) != len(f.params) {
		return fmt.Errorf("cuda: Launch %s: %d arguments for %d parameters: %w", f.display, len(args), len(f.params), ErrArgs)
	}
	for i := range args {
		if args[i].size != f.params[i] {
			return fmt.Errorf("cuda: Launch %s: argument %d has %d bytes, its parameter %d: %w", f.display, i, args[i].size, f.params[i], ErrArgs)
		}
	}
	return f.checkTypes(args)
}

// checkTypes compares the arguments with a C++ kernel's parameter types,
// one bit each (see params.go).
func (f *Func) checkTypes(args []Arg) error {
	for i, accept := range f.accepts {
		if accept>>args[i].code&1 == 0 {
			return fmt.Errorf("cuda: Launch %s: argument %d is %s, its parameter %d is %s: %w",
				f.display, i, describeCode(args[i].code), i, f.typed[i].text, ErrArgs)
		}
	}
	return nil
}

// Close unloads the module (cuModuleUnload); its Funcs become unusable.
// Closing twice is an error matching ErrClosed.
func (m *Module) Close() error {
	if m == nil || m.st == nil {
		return nilErr("Module", "Close")
	}
	m.cleanup.Stop()
	return m.st.close()
}

func (ms *moduleState) close() error {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.closed {
		return closedErr("Module", "Close")
	}
	ms.closed = true
	ms.closeGlobals()
	var err error
	if !ms.fromLibrary { // a Library's module goes with the library
		err = ms.ctx.do(func() error { return libcuda.ModuleUnload(ms.raw) })
	}
	if err != nil {
		err = driverErr("cuModuleUnload", err)
	}
	return errors.Join(err, ms.ctx.unref())
}
