//go:build !((linux && (amd64 || arm64)) || (windows && amd64))

package libcuda

// On other systems no driver can be loaded (see load_other.go), so every
// wrapper returns the load error before it reaches call. These stubs only
// keep the package building.

func call(f *frame) { f.r = uintptr(CUDA_ERROR_NOT_SUPPORTED) }

func callPinned(f *frame) { call(f) }

func callQueued(f *frame) { call(f) }

func callFence(f *frame) { call(f) }

func callFloat(f *frame) { call(f) }

func pinQueued(on bool) bool { return false }
