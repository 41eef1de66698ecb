package libcuda

import (
	"fmt"
	"math"
	"unsafe"
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
		return 0, err
	}
	return m, nil
}

// Function looks up a kernel of m by its entry name (cuModuleGetFunction).
func (m Module) Function(name string) (Function, error) {
	if m == 0 {
		return 0, fmt.Errorf("libcuda: Module.Function(%q): nil module", name)
	}
	cname := append([]byte(name), 0)
	var f Function
	if err := ModuleGetFunction(&f, m, &cname[0]); err != nil {
		return 0, fmt.Errorf("libcuda: kernel %q: %w", name, err)
	}
	return f, nil
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

// maxKernelArgs bounds the arguments Launch packs.
const maxKernelArgs = 32

// kernelArgs is the argument block of one launch: the values, one or more
// 8-byte words each, and the array of pointers to them that
// cuLaunchKernel's kernelParams wants. It lives on Launch's stack: the
// driver copies the arguments before cuLaunchKernel returns, and the stack
// cannot move during the call.
type kernelArgs struct {
	ptrs [maxKernelArgs]unsafe.Pointer
	vals [maxKernelArgs]uint64
}

// Launch runs kernel f on stream with the given grid and block sizes and
// dynamic shared memory (cuLaunchKernel). Each argument is packed as the
// kernel's parameter of the same position expects it; the supported Go
// types are the integer and float types, bool, Deviceptr and uintptr (as
// 64-bit addresses), and unsafe.Pointer (a host address, for memory the
// device can reach: mapped, registered or managed).
//
// # Memory
//
// The argument values are copied by the driver before Launch returns. Memory
// that an argument points to must stay valid until the kernel has finished.
func (f Function) Launch(grid, block Dim3, sharedMem uint32, stream Stream, args ...any) error {
	if f == 0 {
		return fmt.Errorf("libcuda: Launch: nil function")
	}
	if len(args) > maxKernelArgs {
		return fmt.Errorf("libcuda: Launch: %d arguments, at most %d are supported", len(args), maxKernelArgs)
	}
	var ka kernelArgs
	for i, a := range args {
		v, err := argWord(a)
		if err != nil {
			return fmt.Errorf("libcuda: Launch: argument %d: %w", i, err)
		}
		ka.vals[i] = v
		ka.ptrs[i] = unsafe.Pointer(&ka.vals[i])
	}
	var params *unsafe.Pointer
	if len(args) > 0 {
		params = &ka.ptrs[0]
	}
	g, b := grid.norm(), block.norm()
	return LaunchKernel(f, g.X, g.Y, g.Z, b.X, b.Y, b.Z, sharedMem, stream, params, nil)
}

// argWord returns a kernel argument as the little-endian word whose first
// bytes the kernel reads (all supported targets are little-endian).
func argWord(a any) (uint64, error) {
	switch v := a.(type) {
	case int:
		return uint64(v), nil
	case int8:
		return uint64(v), nil
	case int16:
		return uint64(v), nil
	case int32:
		return uint64(v), nil
	case int64:
		return uint64(v), nil
	case uint:
		return uint64(v), nil
	case uint8:
		return uint64(v), nil
	case uint16:
		return uint64(v), nil
	case uint32:
		return uint64(v), nil
	case uint64:
		return v, nil
	case uintptr:
		return uint64(v), nil
	case Deviceptr:
		return uint64(v), nil
	case unsafe.Pointer:
		return uint64(uintptr(v)), nil
	case float32:
		return uint64(math.Float32bits(v)), nil
	case float64:
		return math.Float64bits(v), nil
	case bool:
		if v {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("unsupported type %T", a)
}
