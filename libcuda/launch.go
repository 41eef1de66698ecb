package libcuda

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"unsafe"

	"github.com/purecuda/purecuda/internal/dl"
)

// LoadModule loads a PTX or cubin image into the current context
// (cuModuleLoadData). A PTX image needs no terminating NUL: LoadModule adds
// one when it is missing. The image is not kept after the call.
func LoadModule(image []byte) (Module, error) {
	if len(image) == 0 {
		return 0, fmt.Errorf("libcuda: LoadModule: empty image")
	}
	if image[len(image)-1] != 0 {
		image = append(image[:len(image):len(image)], 0)
	}
	var m Module
	if err := ModuleLoadData(&m, unsafe.Pointer(&image[0])); err != nil {
		return 0, dl.Failed("libcuda", "cuModuleLoadData", err)
	}
	return m, nil
}

// Func is a function (kernel) of a loaded module together with its name and its
// parameter list, against which Launch checks every launch. It is valid
// while its module is loaded, like the Function handle it carries: after
// cuModuleUnload the driver may give the same handle to a function of
// another module, so take the Func anew from the module that was loaded
// (the parameter list lives in this value, never in a table keyed by the
// handle).
type Func struct {
	fn     Function
	name   string
	params []ParamInfo // nil when the driver cannot tell (before CUDA 12.4)
	quick  quickSig    // the parameter sizes packed, for Launch's quick check
}

// Function looks up a kernel of m by its entry name (cuModuleGetFunction)
// and reads its parameter list (cuFuncGetParamInfo, see FuncParams). With a
// driver older than CUDA 12.4, which lacks cuFuncGetParamInfo, the Func
// has no parameter list and its launches are checked less (see Launch).
func (m Module) Function(name string) (Func, error) {
	if m == 0 {
		return Func{}, fmt.Errorf("libcuda: Module.Function(%q): nil module", name)
	}
	cname := append([]byte(name), 0)
	var f Function
	if err := ModuleGetFunction(&f, m, &cname[0]); err != nil {
		return Func{}, dl.Failed("libcuda", fmt.Sprintf("cuModuleGetFunction(%q)", name), err)
	}
	params, err := FuncParams(f)
	if err != nil && !errors.Is(err, ErrSymbol) {
		return Func{}, fmt.Errorf("libcuda: kernel %q: %w", name, err)
	}
	return Func{fn: f, name: name, params: params, quick: quickSigOf(params)}, nil
}

// Handle returns the driver's handle of the kernel.
func (k Func) Handle() Function { return k.fn }

// Name returns the kernel's entry name.
func (k Func) Name() string { return k.name }

// Params returns the kernel's parameter list; ok is false when the driver
// could not tell it (no cuFuncGetParamInfo before CUDA 12.4). The slice is
// shared: do not modify it.
func (k Func) Params() (params []ParamInfo, ok bool) { return k.params, k.params != nil }

// Launch runs the kernel on stream with the given grid and block sizes and
// dynamic shared memory (cuLaunchKernel), after checking the arguments
// against the kernel's parameter list: their number, and the size of each,
// which must equal the parameter's (pass int32 for a C int, uint64 or int
// for a 64-bit integer, Deviceptr or unsafe.Pointer for a pointer). See
// LaunchChecked for the argument types and what is checked without a
// parameter list. A launch allocates nothing.
//
// # Memory
//
// The argument values are copied by the driver before Launch returns. Memory
// that an argument points to must stay valid until the kernel has finished.
func (k Func) Launch(grid, block Dim3, sharedMem uint32, stream Stream, args ...any) error {
	if int(k.quick.n) == len(args)+1 && k.fn != 0 {
		// The quick check: argument types known by the interface's type
		// word alone, sizes against the packed ones. Anything else goes to
		// LaunchChecked, which accepts or refuses it as it would anyway.
		var ptrs [quickArgs]unsafe.Pointer
		ok := true
		for i := range args {
			ptrs[i], ok = quickArg(&args[i], k.quick.sizes>>(8*i)&0xff)
			if !ok {
				break
			}
		}
		if ok {
			var kp *unsafe.Pointer
			if len(args) > 0 {
				kp = &ptrs[0]
			}
			g, b := grid.norm(), block.norm()
			return LaunchKernel(k.fn, g.X, g.Y, g.Z, b.X, b.Y, b.Z, sharedMem, stream, kp, nil)
		}
	}
	return LaunchChecked(k.fn, k.name, k.params, grid, block, sharedMem, stream, args)
}

// quickArgs is the most parameters of a kernel whose launches Func.Launch
// checks quickly.
const quickArgs = 8

// quickSig is a kernel's parameter sizes for the quick check of
// Func.Launch: the size of parameter i in byte i of sizes, for a kernel
// of at most quickArgs parameters of less than 256 bytes each, whose count
// plus one is n (0: no quick check, the full one of LaunchChecked).
type quickSig struct {
	sizes uint64
	n     uint8
}

func quickSigOf(params []ParamInfo) quickSig {
	if params == nil || len(params) > quickArgs {
		return quickSig{}
	}
	var q quickSig
	for i, p := range params {
		if p.Size >= 256 {
			return quickSig{}
		}
		q.sizes |= uint64(p.Size) << (8 * i)
	}
	q.n = uint8(len(params)) + 1
	return q
}

// quickArg returns where the bytes of *a lie when *a is of a type the
// quick check knows (the common scalar types, told by the interface's
// type word alone, without reading the type) and of size bytes.
func quickArg(a *any, size uint64) (unsafe.Pointer, bool) {
	var n uint64
	switch {
	case isType[Deviceptr](a), isType[uint64](a), isType[int64](a), isType[float64](a):
		n = 8
	case isType[int32](a), isType[uint32](a), isType[float32](a):
		n = 4
	case isType[int](a), isType[uint](a), isType[uintptr](a):
		n = uint64(unsafe.Sizeof(uintptr(0)))
	case isType[unsafe.Pointer](a):
		// Stored directly: the interface's data word is the value.
		return unsafe.Pointer(&(*eface)(unsafe.Pointer(a)).data), size == 8
	}
	// Stored indirectly: the data word points at the value.
	return (*eface)(unsafe.Pointer(a)).data, n != 0 && n == size
}

// isType says whether *a holds a T: one comparison of the interface's
// type word with T's type, which reads nothing of the type itself.
func isType[T any](a *any) bool {
	_, ok := (*a).(T)
	return ok
}

// ParamInfo is one parameter of a kernel: where it lies in the kernel's
// parameter buffer and how many bytes it takes.
type ParamInfo struct {
	Offset uintptr
	Size   uintptr
}

// maxKernelParams bounds the parameters FuncParams reads: a parameter takes
// at least one byte of a buffer of at most 32,764.
const maxKernelParams = 32764

// FuncParams returns the parameter list of f (cuFuncGetParamInfo for each
// index until the driver says there is none: CUDA_ERROR_INVALID_VALUE).
// It returns a non-nil slice, empty for a kernel without parameters. With a
// driver older than CUDA 12.4 the error is a *SymbolError (errors.Is(err,
// ErrSymbol)). Read it once per function and keep it with the value that
// owns the function: the driver reuses handles after a module is unloaded.
func FuncParams(f Function) ([]ParamInfo, error) {
	if f == 0 {
		return nil, errors.New("libcuda: FuncParams: nil function")
	}
	params := []ParamInfo{}
	for i := range maxKernelParams {
		var off, size uint64
		err := FuncGetParamInfo(f, uint64(i), &off, &size)
		if errors.Is(err, CUDA_ERROR_INVALID_VALUE) {
			return params, nil
		}
		if err != nil {
			return nil, fmt.Errorf("libcuda: FuncParams: parameter %d: %w", i, dl.Failed("", "cuFuncGetParamInfo", err))
		}
		params = append(params, ParamInfo{Offset: uintptr(off), Size: uintptr(size)})
	}
	return nil, fmt.Errorf("libcuda: FuncParams: more than %d parameters", maxKernelParams)
}

// Dim3 is a grid or block size. A zero field counts as 1.
type Dim3 struct{ X, Y, Z uint32 }

func (d Dim3) norm() Dim3 {
	if d.X == 0 {
		d.X = 1
	}
	if d.Y == 0 {
		d.Y = 1
	}
	if d.Z == 0 {
		d.Z = 1
	}
	return d
}

// MaxKernelArgs bounds the arguments of one launch through Launch or
// LaunchChecked (the block of pointers to them lives on the stack).
const MaxKernelArgs = 64

// LaunchChecked checks args against params (as CheckArgs) and launches f
// with them (cuLaunchKernel). kernel names f in errors. It allocates
// nothing: the pointers the driver reads lie on its stack and point at the
// argument values themselves, which the driver copies before the call
// returns. Package cuda and other layers that keep a kernel's parameter
// list launch through it.
//
// Without a parameter list (params nil: a driver older than CUDA 12.4)
// only the argument types and their count (at most MaxKernelArgs) are
// checked; each argument of 8 bytes or less is then passed widened with
// zeros to 8 bytes, so that a kernel reading a wider parameter than given
// reads zeros, not memory beyond the value; larger values pass as they are.
func LaunchChecked(f Function, kernel string, params []ParamInfo, grid, block Dim3, sharedMem uint32, stream Stream, args []any) error {
	if f == 0 {
		return fmt.Errorf("libcuda: launch %s: nil function", kernel)
	}
	if len(args) > MaxKernelArgs {
		return fmt.Errorf("libcuda: launch %s: %d arguments, at most %d are supported", kernel, len(args), MaxKernelArgs)
	}
	if len(args) <= smallLaunch {
		return launchWith[[smallLaunch]unsafe.Pointer, [smallLaunch]uint64](f, kernel, params, grid, block, sharedMem, stream, args)
	}
	return launchWith[[MaxKernelArgs]unsafe.Pointer, [MaxKernelArgs]uint64](f, kernel, params, grid, block, sharedMem, stream, args)
}

// smallLaunch is the most arguments of a launch whose pointer block has
// smallLaunch entries: most launches zero 128 bytes of stack, not 1 KiB.
const smallLaunch = 8

// launchWith is LaunchChecked with the pointers the driver reads in a P
// and the widened values in a W, on its stack; len(args) fits them.
func launchWith[P [smallLaunch]unsafe.Pointer | [MaxKernelArgs]unsafe.Pointer, W [smallLaunch]uint64 | [MaxKernelArgs]uint64](
	f Function, kernel string, params []ParamInfo, grid, block Dim3, sharedMem uint32, stream Stream, args []any) error {
	var ptrs P
	var words W // the widened values, without a parameter list
	if params != nil {
		if err := checkCount(kernel, params, len(args)); err != nil {
			return err
		}
	}
	for i := range args {
		p, t, ok := argBytes(&args[i])
		if !ok {
			return argTypeError(kernel, i, t)
		}
		size := t.Size()
		switch {
		case params != nil:
			if size != params[i].Size {
				return argSizeError(kernel, i, params[i].Size, size, t)
			}
		case size <= 8:
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&words[i])), 8), unsafe.Slice((*byte)(p), size))
			p = unsafe.Pointer(&words[i])
		}
		ptrs[i] = p
	}
	var kp *unsafe.Pointer
	if len(args) > 0 {
		kp = &ptrs[0]
	}
	g, b := grid.norm(), block.norm()
	return LaunchKernel(f, g.X, g.Y, g.Z, b.X, b.Y, b.Z, sharedMem, stream, kp, nil)
}

// CheckArgs reports whether args fit params, the parameter list of the
// kernel named kernel (nil: unknown, only the types are checked): as many
// arguments as parameters, and each argument's size equal to its
// parameter's. An argument is a bool, an integer, a float or a complex
// number (of any named type too, such as Deviceptr), an unsafe.Pointer (a
// host address, for memory the device can reach: mapped, registered or
// managed), or a struct or array without Go pointers (passed by value).
// Go pointers, slices, strings, maps, channels, functions and interfaces
// are refused: their bytes mean nothing on the device. The error names the
// kernel, the argument's index, the expected and the given size.
func CheckArgs(kernel string, params []ParamInfo, args []any) error {
	if params != nil {
		if err := checkCount(kernel, params, len(args)); err != nil {
			return err
		}
	}
	for i := range args {
		_, t, ok := argBytes(&args[i])
		if !ok {
			return argTypeError(kernel, i, t)
		}
		if params != nil && t.Size() != params[i].Size {
			return argSizeError(kernel, i, params[i].Size, t.Size(), t)
		}
	}
	return nil
}

func checkCount(kernel string, params []ParamInfo, n int) error {
	if n != len(params) {
		return fmt.Errorf("libcuda: launch %s: %d arguments given, the kernel takes %d", kernel, n, len(params))
	}
	return nil
}

func argTypeError(kernel string, i int, t reflect.Type) error {
	name := "nil"
	if t != nil {
		name = t.String()
	}
	return fmt.Errorf("libcuda: launch %s: argument %d: type %s cannot be a kernel argument (Go pointers, slices, strings, maps, channels, functions and interfaces mean nothing on the device)", kernel, i, name)
}

func argSizeError(kernel string, i int, want, got uintptr, t reflect.Type) error {
	return errors.New("libcuda: launch " + kernel + ": argument " + strconv.Itoa(i) + ": parameter " +
		strconv.Itoa(i) + " takes " + strconv.FormatUint(uint64(want), 10) + " bytes, given " +
		strconv.FormatUint(uint64(got), 10) + " (" + t.String() + ")")
}

// eface is the layout of an interface value with no methods.
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// argBytes returns where the bytes of *a's value lie and its type; ok is
// false for a type that cannot be a kernel argument. It looks into the
// interface itself, so that neither a nor its value escape: a launch
// allocates nothing.
func argBytes(a *any) (p unsafe.Pointer, t reflect.Type, ok bool) {
	t = reflect.TypeOf(*a)
	if t == nil {
		return nil, nil, false
	}
	e := (*eface)(unsafe.Pointer(a))
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return e.data, t, true // stored indirectly: data points at the value
	case reflect.UnsafePointer:
		return unsafe.Pointer(&e.data), t, true // stored directly: data is the value
	case reflect.Struct, reflect.Array:
		if plain(t) { // pointer-free, so stored indirectly
			return e.data, t, true
		}
	}
	return nil, t, false
}

// plainTypes caches plain's answer for struct and array types.
var plainTypes sync.Map // reflect.Type -> bool

// plain reports whether t holds no Go pointers (unsafe.Pointer counts as
// one here: inside a struct it is a pointer the collector follows).
func plain(t reflect.Type) bool {
	if v, ok := plainTypes.Load(t); ok {
		return v.(bool)
	}
	ok := plainWalk(t, 0)
	plainTypes.Store(t, ok)
	return ok
}

func plainWalk(t reflect.Type, depth int) bool {
	if depth > 64 {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return t.Len() == 0 || plainWalk(t.Elem(), depth+1)
	case reflect.Struct:
		for i := range t.NumField() {
			if !plainWalk(t.Field(i).Type, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}
