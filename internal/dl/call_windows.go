//go:build windows && amd64

package dl

// trampolineABI0 and trampolineFloatABI0 hold the addresses of the
// assembly trampolines (call_amd64.s).
var trampolineABI0, trampolineFloatABI0 uintptr
