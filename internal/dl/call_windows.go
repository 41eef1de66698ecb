//go:build windows && amd64

package dl

// trampolineABI0 and trampolineFloatABI0 hold the addresses of the
// assembly trampolines (call_amd64.s).
var trampolineABI0, trampolineFloatABI0 uintptr

// packFloatArgs fills f for the Windows x64 convention: arguments are
// positional, and the first four go to RCX, RDX, R8, R9 or, for a float or
// double, to XMM0-XMM3 of the same position.
func packFloatArgs(f *floatFrame, isFloat uint32, args []uint64) {
	for i, v := range args {
		f.a[i] = uintptr(v)
		if i < 4 && isFloat&(1<<i) != 0 {
			f.x[i] = v
		}
	}
	f.N = uintptr(len(args))
}
