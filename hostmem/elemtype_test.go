package hostmem

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
)

func TestCheckElemAcceptsPlainTypes(t *testing.T) {
	type pair struct {
		A int32
		B [4]float64
		C struct{ D complex128 }
		_ [0]*int // holds nothing
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[int8](), reflect.TypeFor[uint64](), reflect.TypeFor[float32](), reflect.TypeFor[bool](),
		reflect.TypeFor[uintptr](), reflect.TypeFor[libcuda.Deviceptr](), reflect.TypeFor[[3][2]int16](),
		reflect.TypeFor[pair](), reflect.TypeFor[struct{}](),
	} {
		if err := CheckElem(typ); err != nil {
			t.Errorf("CheckElem(%s) = %v, want nil", typ, err)
		}
	}
}

func TestCheckElemRefusesTypesHoldingGoPointersAndNamesThem(t *testing.T) {
	type node struct {
		V    int
		Next *node
	}
	type named struct {
		ID   int
		Tags [2]string
	}
	for typ, want := range map[reflect.Type][]string{
		reflect.TypeFor[*int]():                  {"*int"},
		reflect.TypeFor[[]int32]():               {"[]int32"},
		reflect.TypeFor[string]():                {"string"},
		reflect.TypeFor[map[int]int]():           {"map[int]int"},
		reflect.TypeFor[chan int]():              {"chan int"},
		reflect.TypeFor[func()]():                {"func()"},
		reflect.TypeFor[any]():                   {"interface {}"},
		reflect.TypeFor[error]():                 {"error"},
		reflect.TypeFor[unsafe.Pointer]():        {"unsafe.Pointer"},
		reflect.TypeFor[node]():                  {"hostmem.node", ".Next *hostmem.node"},
		reflect.TypeFor[named]():                 {"hostmem.named", ".Tags[0] string"},
		reflect.TypeFor[[2]struct{ S []byte }](): {"[0].S []uint8"},
	} {
		err := CheckElem(typ)
		if err == nil {
			t.Errorf("CheckElem(%s) = nil, want an error", typ)
			continue
		}
		for _, w := range append(want, "Go pointers") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("CheckElem(%s) = %q, lacks %q", typ, err, w)
			}
		}
		if again := CheckElem(typ); again != err {
			t.Errorf("CheckElem(%s) the second time = %v, want the cached error", typ, again)
		}
	}
	if err := CheckElem(nil); err == nil {
		t.Error("CheckElem(nil) = nil")
	}
}

// Wrap checks the element type before anything else, without a driver call.
func TestWrapRefusesElementTypesWithGoPointers(t *testing.T) {
	if _, err := Wrap(libcuda.Context(0), []string{"a"}); err == nil || !strings.Contains(err.Error(), "element type string holds Go pointers") {
		t.Errorf("Wrap([]string) = %v, want the element type refused", err)
	}
	if _, err := Wrap(libcuda.Context(0), []*int{nil}); err == nil || !strings.Contains(err.Error(), "*int") {
		t.Errorf("Wrap([]*int) = %v, want the element type refused", err)
	}
	if _, err := Wrap(libcuda.Context(0), []int32{1}); !errors.Is(err, ErrNoContext) {
		t.Errorf("Wrap([]int32) without a context = %v, want ErrNoContext (the type passes)", err)
	}
}

func TestCheckElemAllocatesNothingOnceCached(t *testing.T) {
	typ := reflect.TypeFor[[4]int64]()
	_ = CheckElem(typ)
	if n := testing.AllocsPerRun(100, func() { _ = CheckElem(typ) }); n != 0 {
		t.Errorf("a cached CheckElem allocates %v times", n)
	}
}

func TestByteSizeErrors(t *testing.T) {
	for _, c := range []struct {
		n    int
		size uintptr
		want error
		msg  string
	}{
		{-1, 1, ErrNegativeSize, "negative size: -1"},
		{math.MaxInt, 16, ErrTooLarge, "overflow"},
		{1 << 40, 1 << 30, ErrTooLarge, "overflow"},
		{MaxBytes + 1, 1, ErrTooLarge, "at most"},
		{1 << 46, 8, ErrTooLarge, "at most"},
	} {
		_, err := ByteSize(c.n, c.size)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("ByteSize(%d, %d) = %v, want %v with %q", c.n, c.size, err, c.want, c.msg)
		}
	}
	for _, c := range []struct {
		n    int
		size uintptr
		want uintptr
	}{{0, 8, 0}, {3, 4, 12}, {MaxBytes, 1, MaxBytes}, {5, 0, 0}} {
		if got, err := ByteSize(c.n, c.size); err != nil || got != c.want {
			t.Errorf("ByteSize(%d, %d) = %d, %v; want %d", c.n, c.size, got, err, c.want)
		}
	}
}

// Alloc's size is checked before anything else: each bad size its error.
func TestAllocRefusesBadSizes(t *testing.T) {
	if _, err := Alloc(libcuda.Context(0), -1); !errors.Is(err, ErrNegativeSize) {
		t.Errorf("Alloc(-1) = %v, want ErrNegativeSize", err)
	}
	if _, err := Alloc(libcuda.Context(0), 1<<62); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Alloc(1<<62) = %v, want ErrTooLarge", err)
	}
	if _, err := Alloc(libcuda.Context(0), 0); !errors.Is(err, ErrEmpty) {
		t.Errorf("Alloc(0) = %v, want ErrEmpty", err)
	}
}

// FuzzCheckElem builds types with reflect from a byte-coded recipe (a stack
// machine: push a basic or pointer-holding type, wrap the top in a
// pointer, slice or array, or gather the top few into a struct) and checks
// CheckElem against what the recipe put in: never a panic, an error exactly
// when the type holds a Go pointer.
func FuzzCheckElem(f *testing.F) {
	f.Add([]byte{0, 1, 2, 40, 3})
	f.Add([]byte{5, 20, 1, 42, 2})
	f.Add([]byte{9, 33, 0, 0, 41, 4})
	f.Fuzz(func(t *testing.T, recipe []byte) {
		typ, holds := buildType(recipe)
		if typ == nil {
			return
		}
		err := CheckElem(typ)
		if (err != nil) != holds {
			t.Fatalf("CheckElem(%s) = %v, want an error: %v", typ, err, holds)
		}
		if err != nil && !strings.Contains(err.Error(), typ.String()) {
			t.Fatalf("error %q does not name %s", err, typ)
		}
	})
}

var (
	plainLeaves = []reflect.Type{
		reflect.TypeFor[int8](), reflect.TypeFor[uint16](), reflect.TypeFor[int32](), reflect.TypeFor[uint64](),
		reflect.TypeFor[float32](), reflect.TypeFor[float64](), reflect.TypeFor[complex128](), reflect.TypeFor[bool](),
		reflect.TypeFor[uintptr](), reflect.TypeFor[struct{}](),
	}
	pointerLeaves = []reflect.Type{
		reflect.TypeFor[string](), reflect.TypeFor[unsafe.Pointer](), reflect.TypeFor[any](),
		reflect.TypeFor[map[int]int](), reflect.TypeFor[chan int](), reflect.TypeFor[func()](), reflect.TypeFor[error](),
	}
)

type builtType struct {
	t     reflect.Type
	holds bool // holds a Go pointer
}

// buildType runs recipe; it returns the type on top of the stack.
func buildType(recipe []byte) (reflect.Type, bool) {
	if len(recipe) > 80 {
		recipe = recipe[:80] // nesting stays below CheckElem's bound
	}
	var st []builtType
	for i := 0; i < len(recipe); i++ {
		op := recipe[i]
		switch {
		case op < 20:
			st = append(st, builtType{plainLeaves[int(op)%len(plainLeaves)], false})
		case op < 40:
			st = append(st, builtType{pointerLeaves[int(op)%len(pointerLeaves)], true})
		case len(st) == 0:
		case op%8 == 0: // pointer to the top
			st[len(st)-1] = builtType{reflect.PointerTo(st[len(st)-1].t), true}
		case op%8 == 1: // slice of the top
			st[len(st)-1] = builtType{reflect.SliceOf(st[len(st)-1].t), true}
		case op%8 == 2 || op%8 == 3: // array of 0 to 3 of the top
			top := st[len(st)-1]
			n := int(op/8) % 4
			if top.t.Size() > 1<<16 {
				continue
			}
			st[len(st)-1] = builtType{reflect.ArrayOf(n, top.t), top.holds && n > 0}
		default: // struct of the top 1 to 4
			k := min(int(op%4)+1, len(st))
			fields := make([]reflect.StructField, k)
			holds := false
			size := uintptr(0)
			for j, b := range st[len(st)-k:] {
				fields[j] = reflect.StructField{Name: "F" + string(rune('A'+j)), Type: b.t}
				holds = holds || b.holds
				size += b.t.Size()
			}
			if size > 1<<20 {
				continue
			}
			st = append(st[:len(st)-k], builtType{reflect.StructOf(fields), holds})
		}
	}
	if len(st) == 0 {
		return nil, false
	}
	top := st[len(st)-1]
	return top.t, top.holds
}
