//go:build linux && (amd64 || arm64)

package dl

// trampolineABI0 and trampolineFloatABI0 hold the addresses of the
// assembly trampolines (call_amd64.s, call_arm64.s).
var trampolineABI0, trampolineFloatABI0 uintptr

// packFloatArgs fills f for the System V (amd64) and AAPCS64 (arm64)
// conventions, where integer and floating-point arguments take the next
// free register of their own class.
func packFloatArgs(f *floatFrame, isFloat uint32, args []uint64) {
	var nx int
	for i, v := range args {
		if isFloat&(1<<i) != 0 && nx < len(f.x) {
			f.x[nx] = v
			nx++
			continue
		}
		f.a[f.N] = uintptr(v)
		f.N++
	}
}
