package libcuda

import (
	"testing"
	"unsafe"
)

// TestWrappersDoNotAllocate calls wrappers of each shape with pointers to
// local variables: if a frame, an argument or a variable left the stack,
// every call would allocate.
func TestWrappersDoNotAllocate(t *testing.T) {
	calls := map[string]func(){
		"pointer": func() {
			var ctx Context
			_ = CtxGetCurrent(&ctx)
		},
		"no arguments": func() { _ = CtxSynchronize() },
		"small struct": func() {
			var loc MemLocation
			_ = MemPrefetchAsync(0, 8, loc, 0, CU_STREAM_LEGACY)
		},
		"large struct": func() {
			var ptr Deviceptr
			var handle IpcMemHandle
			_ = IpcOpenMemHandle(&ptr, handle, 0)
		},
		"float":  func() { _ = ParamSetf(0, 4, 1.5) },
		"double": func() { _ = ParamSetd(0, 2.5, 1.5) },
		"many words": func() {
			var kp unsafe.Pointer
			_ = LaunchKernel(0, 1, 1, 1, 1, 1, 1, 0, 0, &kp, nil)
		},
		"structs": func() {
			var (
				tmap   TensorMap
				params Params
				nested CUDA_NESTED
			)
			_ = TensorMapEncode(&tmap, &params, &nested)
		},
	}
	for name, f := range calls {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per call", name, n)
		}
	}
}
