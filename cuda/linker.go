package cuda

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
)

// Linker links PTX, cubins and fat binaries into one image with the
// driver's linker (cuLinkCreate, cuLinkAddData, cuLinkComplete), for
// LoadModule: code compiled separately (-rdc) whose kernels call each
// other's __device__ functions. Add the pieces, then Link. NVRTC's LTO-IR
// is for package nvjitlink: the driver's linker takes only the LTO input
// of toolkits before CUDA 12.
//
// A Linker only collects its inputs until Link: it holds no driver state
// and needs no Close. It is not safe for concurrent use.
type Linker struct {
	inputs []linkInput
}

type linkInput struct {
	kind libcuda.JitInputType
	name string
	data []byte
}

func (l *Linker) add(kind libcuda.JitInputType, what, name string, data []byte) error {
	if l == nil {
		return fmt.Errorf("cuda: Linker.Add%s on a nil Linker: %w", what, ErrNil)
	}
	if len(data) == 0 {
		return fmt.Errorf("cuda: Linker.Add%s(%q): empty input", what, name)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("cuda: Linker.Add%s: the name %q holds a NUL byte", what, name)
	}
	if kind == libcuda.CU_JIT_INPUT_PTX && data[len(data)-1] != 0 {
		data = append(data[:len(data):len(data)], 0)
	}
	l.inputs = append(l.inputs, linkInput{kind: kind, name: name, data: data})
	return nil
}

// AddPTX adds PTX text (with or without its terminating NUL); name is for
// the logs. The bytes are read by Link: do not change them before.
func (l *Linker) AddPTX(name string, ptx []byte) error {
	return l.add(libcuda.CU_JIT_INPUT_PTX, "PTX", name, ptx)
}

// AddCubin adds machine code for the device's architecture.
func (l *Linker) AddCubin(name string, cubin []byte) error {
	return l.add(libcuda.CU_JIT_INPUT_CUBIN, "Cubin", name, cubin)
}

// AddFatbin adds a fat binary, from which the linker takes what fits the
// device.
func (l *Linker) AddFatbin(name string, fatbin []byte) error {
	return l.add(libcuda.CU_JIT_INPUT_FATBINARY, "Fatbin", name, fatbin)
}

// Link links the inputs for the context's device (or the Target option's
// architecture) and returns the image, a cubin for LoadModule. The
// options are LoadModule's. When the linker refuses an input or the link,
// the error is a *JITError with the linker's logs.
func (l *Linker) Link(ctx *Context, opts ...ModuleOption) ([]byte, error) {
	if l == nil {
		return nil, nilErr("Linker", "Link")
	}
	if len(l.inputs) == 0 {
		return nil, errors.New("cuda: Linker.Link: nothing to link")
	}
	cst, err := ctx.live("Linker.Link")
	if err != nil {
		return nil, err
	}
	jc, err := newJITCall(opts)
	if err != nil {
		return nil, fmt.Errorf("cuda: Linker.Link: %w", err)
	}
	var image []byte
	err = cst.do(func() error {
		var state libcuda.LinkState
		n, ids, vals := jc.args()
		if err := libcuda.LinkCreate(n, ids, vals, &state); err != nil {
			return jc.jitErr("cuLinkCreate", err)
		}
		var lerr error
		image, lerr = l.link(state, jc)
		if derr := libcuda.LinkDestroy(state); derr != nil {
			lerr = errors.Join(lerr, driverErr("cuLinkDestroy", derr))
		}
		return lerr
	})
	jc.keepAlive() // the logs, written until cuLinkDestroy
	if err != nil {
		return nil, err
	}
	return image, nil
}

// link adds the inputs to state and completes it; the image is copied
// out, since the driver's copy goes with the state.
func (l *Linker) link(state libcuda.LinkState, jc *jitCall) ([]byte, error) {
	for i, in := range l.inputs {
		name := in.name
		if name == "" {
			name = fmt.Sprintf("input %d", i)
		}
		cname := append([]byte(name), 0)
		err := libcuda.LinkAddData(state, in.kind, unsafe.Pointer(&in.data[0]), uint64(len(in.data)), &cname[0], 0, nil, nil)
		if err != nil {
			return nil, jc.jitErr(fmt.Sprintf("cuLinkAddData(%s)", name), err)
		}
	}
	var p unsafe.Pointer
	var size uint64
	if err := libcuda.LinkComplete(state, &p, &size); err != nil {
		return nil, jc.jitErr("cuLinkComplete", err)
	}
	if p == nil || size == 0 {
		return nil, errors.New("cuda: cuLinkComplete gave an empty image")
	}
	return append([]byte(nil), unsafe.Slice((*byte)(p), size)...), nil
}
