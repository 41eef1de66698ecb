//go:build linux && (amd64 || arm64)

package dl

// trampolineABI0 and trampolineFloatABI0 hold the addresses of the
// assembly trampolines (call_amd64.s, call_arm64.s).
var trampolineABI0, trampolineFloatABI0 uintptr
