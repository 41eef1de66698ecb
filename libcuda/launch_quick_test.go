package libcuda

import (
	"slices"
	"testing"
	"unsafe"
)

// Func.Launch's quick check takes an argument only where the full check
// (argBytes against the parameter's size) would, and points the driver at
// the same bytes; everything it does not take goes to the full check.
func TestQuickArgAgreesWithTheFullCheck(t *testing.T) {
	type pair struct{ A, B int32 }
	var x int32
	args := []any{
		Deviceptr(0x1000), uint64(1), int64(-2), float64(3.5), int(4), uint(5), uintptr(6),
		int32(-7), uint32(8), float32(9.5), unsafe.Pointer(&x),
		int8(1), uint16(2), true, complex64(1), pair{1, 2}, [2]uint32{3, 4}, // full check only
		"s", &x, []int{1}, nil, // refused by the full check
	}
	quick := map[int]bool{}
	for i := range 11 {
		quick[i] = true
	}
	for i := range args {
		p, typ, accepted := argBytes(&args[i])
		for _, size := range []uint64{0, 1, 2, 4, 8, 16} {
			q, ok := quickArg(&args[i], size)
			want := quick[i] && accepted && uint64(typ.Size()) == size
			if ok != want {
				t.Errorf("argument %d (%T), parameter of %d bytes: quick check says %v, want %v", i, args[i], size, ok, want)
			}
			if ok && q != p {
				t.Errorf("argument %d (%T): quick check points at %p, the full check at %p", i, args[i], q, p)
			}
		}
	}
}

// The packed sizes of the quick check exist only for parameter lists it
// can hold: at most quickArgs parameters, each of less than 256 bytes.
func TestQuickSigOnlyForShortParameterLists(t *testing.T) {
	p := func(sizes ...uintptr) []ParamInfo {
		var ps []ParamInfo
		for _, s := range sizes {
			ps = append(ps, ParamInfo{Size: s})
		}
		return ps
	}
	for _, c := range []struct {
		params []ParamInfo
		want   quickSig
	}{
		{nil, quickSig{}},
		{[]ParamInfo{}, quickSig{n: 1}},
		{p(8, 4, 8, 4), quickSig{sizes: 0x04080408, n: 5}},
		{p(8, 8, 8, 8, 8, 8, 8, 8), quickSig{sizes: 0x0808080808080808, n: 9}},
		{p(8, 8, 8, 8, 8, 8, 8, 8, 8), quickSig{}},
		{p(8, 256), quickSig{}},
	} {
		if got := quickSigOf(c.params); got != c.want {
			t.Errorf("quickSigOf(%v) = %+v, want %+v", c.params, got, c.want)
		}
	}
}

// A launch with more arguments than the quick check holds goes to the full
// check, which refuses more than MaxKernelArgs, whatever the count is
// modulo 256 (the count plus one was once compared in a byte: 264
// arguments passed for a kernel of 8, and the quick check indexed past
// its 8 pointers).
func TestLaunchWithManyArgumentsIsRefusedNotPanicking(t *testing.T) {
	kernel := func(name string, params []ParamInfo) Func {
		return Func{fn: 1, name: name, params: params, quick: quickSigOf(params)}
	}
	for _, k := range []Func{
		kernel("unknown", nil), // no parameter list: no quick check
		kernel("three", slices.Repeat([]ParamInfo{{Size: 4}}, 3)),
		kernel("eight", slices.Repeat([]ParamInfo{{Size: 4}}, 8)),
	} {
		for _, n := range []int{255, 259, 264, 511} {
			args := make([]any, n)
			for i := range args {
				args[i] = int32(i)
			}
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s with %d arguments panicked: %v", k.name, n, p)
					}
				}()
				if err := k.Launch(Dim3{}, Dim3{}, 0, 0, args...); err == nil {
					t.Errorf("%s with %d arguments: no error", k.name, n)
				}
			}()
		}
	}
}
