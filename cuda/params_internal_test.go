package cuda

import "testing"

// BenchmarkFuncCheck measures the argument check of a launch: by size
// (an extern "C" kernel) and by size and type (a C++ kernel's mangled
// name), for scale<float>(float*, float, unsigned long long).
func BenchmarkFuncCheck(b *testing.B) {
	sig, ok := demangleFunc("_Z5scaleIfEvPT_S0_y")
	if !ok {
		b.Fatal("not demangled")
	}
	args := []Arg{{size: 8, code: codeMem + uint8(classF32)}, Float32(2), Uint64(3)}
	accepts := make([]uint64, len(sig.params))
	for i, p := range sig.params {
		accepts[i] = p.accept
	}
	for name, f := range map[string]*Func{
		"sizes":       {display: "scale", params: []uint32{8, 4, 8}},
		"sizes+types": {display: "scale", params: []uint32{8, 4, 8}, typed: sig.params, accepts: accepts},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := f.check(args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
