package libcuda

import "errors"

// ErrContextLost is matched (errors.Is) by every sticky Result, the ones
// cuda.h says leave the process in an inconsistent state (see
// Result.ContextLost), and so by every error that wraps one, in this
// package and in those built on it (sync, graph, hostmem, cuda).
//
// A context that returned one is lost, and so is its device for this
// process: after an illegal address or a trap every call in the context
// fails with the same Result (queries of
// other, idle streams and of events that completed before the fault,
// allocations, launches, copies, stream creation, unregisters), only
// cuCtxGetCurrent still succeeds, and cuDevicePrimaryCtxReset returns
// success but the next cuDevicePrimaryCtxRetain fails with the same
// Result. Nothing on that device works again: the process must be
// restarted to use it. Other devices are not affected.
var ErrContextLost = errors.New("CUDA context lost: the process must be restarted to use the device again")

// ContextLost reports whether r is a sticky error, after which the context
// that returned it (and its device, for this process) is lost; see
// ErrContextLost. These are the Results whose description in cuda.h says
// that any further CUDA work returns the same error, or that the context
// cannot be used any more: CUDA_ERROR_CONTAINED, ILLEGAL_ADDRESS,
// LAUNCH_TIMEOUT, ASSERT, HARDWARE_STACK_ERROR, ILLEGAL_INSTRUCTION,
// MISALIGNED_ADDRESS, INVALID_ADDRESS_SPACE, INVALID_PC, LAUNCH_FAILED,
// TENSOR_MEMORY_LEAK, MPS_CLIENT_TERMINATED and EXTERNAL_DEVICE.
func (r Result) ContextLost() bool {
	switch r {
	case CUDA_ERROR_CONTAINED, CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_LAUNCH_TIMEOUT, CUDA_ERROR_ASSERT,
		CUDA_ERROR_HARDWARE_STACK_ERROR, CUDA_ERROR_ILLEGAL_INSTRUCTION, CUDA_ERROR_MISALIGNED_ADDRESS,
		CUDA_ERROR_INVALID_ADDRESS_SPACE, CUDA_ERROR_INVALID_PC, CUDA_ERROR_LAUNCH_FAILED,
		CUDA_ERROR_TENSOR_MEMORY_LEAK, CUDA_ERROR_MPS_CLIENT_TERMINATED, CUDA_ERROR_EXTERNAL_DEVICE:
		return true
	}
	return false
}

// Is makes a sticky Result match ErrContextLost (errors.Is), besides
// itself.
func (r Result) Is(target error) bool { return target == ErrContextLost && r.ContextLost() }
