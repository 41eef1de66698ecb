//go:build (linux && (amd64 || arm64)) || (windows && amd64)

package libcuda

import (
	"math"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/internal/dl"
)

// maxArgWords is the most arguments a call can pass.
const maxArgWords = dl.MaxArgWords

func mustSym(t testing.TB, lib dl.Library, name string) uintptr {
	t.Helper()
	a, ok := lib.Sym(name)
	if !ok {
		t.Fatalf("no symbol %s", name)
	}
	return a
}

func TestCallPassesEveryArgumentWord(t *testing.T) {
	fn := mustSym(t, abiLibrary(t), "abi_args")
	for n := 0; n < maxArgWords; n++ {
		var f struct {
			frame
			a [maxArgWords]uintptr
		}
		f.fn, f.n = fn, uintptr(n+1)
		f.a[0] = uintptr(n)
		for i := 1; i <= n; i++ {
			f.a[i] = 0x1000 + uintptr(i)
		}
		call(&f.frame)
		if got := int32(f.r); got != 0 {
			t.Errorf("%d arguments: argument %d arrived wrong", n+1, got)
		}
	}
}

func TestCallPointerArgumentsReachStackVariables(t *testing.T) {
	fn := mustSym(t, abiLibrary(t), "abi_out")
	var (
		i int32
		u uint64
		p unsafe.Pointer
	)
	var f struct {
		frame
		a0, a1, a2 unsafe.Pointer
		_          [5]uintptr
	}
	f.fn, f.n = fn, 3
	f.a0, f.a1, f.a2 = unsafe.Pointer(&i), unsafe.Pointer(&u), unsafe.Pointer(&p)
	call(&f.frame)
	if i != -7 || u != 0xfedcba9876543210 || p != unsafe.Pointer(&u) {
		t.Fatalf("out parameters: got %d, %#x, %p; want -7, 0xfedcba9876543210, %p", i, u, p, &u)
	}
}

func TestCallSignExtendsAndTruncatesInt32(t *testing.T) {
	fn := mustSym(t, abiLibrary(t), "abi_negative")
	for _, v := range []int32{-1, -900, math.MinInt32, 0, 712} {
		var f struct {
			frame
			a0 uintptr
			_  [7]uintptr
		}
		f.fn, f.n, f.a0 = fn, 1, uintptr(v)
		call(&f.frame)
		if got := int32(f.r); got != v {
			t.Errorf("abi_negative(%d) = %d", v, got)
		}
	}
}

func TestCallAllocatesNothing(t *testing.T) {
	fn := mustSym(t, abiLibrary(t), "abi_out")
	var (
		i int32
		u uint64
		p unsafe.Pointer
	)
	allocs := testing.AllocsPerRun(100, func() {
		var f struct {
			frame
			a0, a1, a2 unsafe.Pointer
			_          [5]uintptr
		}
		f.fn, f.n = fn, 3
		f.a0, f.a1, f.a2 = unsafe.Pointer(&i), unsafe.Pointer(&u), unsafe.Pointer(&p)
		call(&f.frame)
	})
	if allocs != 0 {
		t.Fatalf("a call allocates %v times", allocs)
	}
}
