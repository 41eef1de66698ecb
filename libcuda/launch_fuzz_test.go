package libcuda_test

import (
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
)

// fuzzArgs are the argument values the fuzz target picks from, by byte.
var fuzzArgs = []any{
	int8(1), uint8(1), int16(1), uint16(1), int32(1), uint32(1), int64(1), uint64(1), int(1), uint(1),
	uintptr(1), float32(1), float64(1), complex64(1), complex128(1), true, libcuda.Deviceptr(1),
	unsafe.Pointer(nil), struct{ A, B uint32 }{}, [3]uint32{}, struct{}{}, [0]*int{},
	// refused
	nil, &struct{}{}, []byte{}, "s", map[int]int{}, make(chan int), func() {}, struct{ P *int }{},
	[1]string{}, any(error(nil)),
}

// FuzzCheckArgs checks random arguments against random parameter lists:
// CheckArgs never panics, and accepts exactly when the counts match, every
// type may be an argument and every size matches its parameter's.
func FuzzCheckArgs(f *testing.F) {
	f.Add([]byte{8, 8, 4}, []byte{16, 7, 4}, false)
	f.Add([]byte{8}, []byte{23}, false)
	f.Add([]byte{}, []byte{}, true)
	f.Add([]byte{200, 8}, []byte{18, 1}, false)
	f.Fuzz(func(t *testing.T, sizes, picks []byte, unknown bool) {
		var params []libcuda.ParamInfo
		if !unknown {
			params = []libcuda.ParamInfo{}
			off := uintptr(0)
			for _, s := range sizes {
				params = append(params, libcuda.ParamInfo{Offset: off, Size: uintptr(s)})
				off += uintptr(s)
			}
		}
		args := make([]any, len(picks))
		for i, p := range picks {
			args[i] = fuzzArgs[int(p)%len(fuzzArgs)]
		}
		err := libcuda.CheckArgs("k", params, args)

		want := params == nil || len(params) == len(args)
		for i, a := range args {
			size, ok := argSize(a)
			if !ok || (params != nil && i < len(params) && size != params[i].Size) {
				want = false
			}
		}
		if (err == nil) != want {
			t.Fatalf("CheckArgs(%v, %T...) = %v, want accepted %v", params, args, err, want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "libcuda: launch k: ") {
			t.Fatalf("error %q does not name the kernel", err)
		}
		if err != nil && params != nil && len(params) != len(args) &&
			!strings.Contains(err.Error(), strconv.Itoa(len(args))+" arguments given, the kernel takes "+strconv.Itoa(len(params))) {
			t.Fatalf("count error %q does not give both counts", err)
		}
	})
}

// argSize is the size of a valid kernel argument, written out per type.
func argSize(a any) (uintptr, bool) {
	switch v := a.(type) {
	case int8, uint8, bool:
		return 1, true
	case int16, uint16:
		return 2, true
	case int32, uint32, float32:
		return 4, true
	case int64, uint64, int, uint, uintptr, float64, complex64, libcuda.Deviceptr, unsafe.Pointer:
		return 8, true
	case complex128:
		return 16, true
	case struct{ A, B uint32 }:
		return unsafe.Sizeof(v), true
	case [3]uint32:
		return 12, true
	case struct{}, [0]*int:
		return 0, true
	}
	return 0, false
}
