package hostmem

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	gosync "sync"
)

// elemChecks caches CheckElem's answer per type: error, or nil for a type
// that may be wrapped.
var elemChecks gosync.Map // reflect.Type -> error (nil allowed)

// CheckElem reports whether memory of element type t may be given to the
// GPU: nil for a type without Go pointers, else an error naming t and the
// part of it that holds a pointer. The answer is computed once per type.
func CheckElem(t reflect.Type) error {
	if t == nil {
		return fmt.Errorf("hostmem: nil element type")
	}
	if v, ok := elemChecks.Load(t); ok {
		if v == nil {
			return nil
		}
		return v.(error)
	}
	var err error
	if where, bad := pointerIn(t, "", 0); bad {
		if where == "" {
			err = fmt.Errorf("hostmem: element type %s holds Go pointers: the GPU cannot use such memory", t)
		} else {
			err = fmt.Errorf("hostmem: element type %s holds Go pointers (%s): the GPU cannot use such memory", t, where)
		}
	}
	if err == nil {
		elemChecks.Store(t, nil)
	} else {
		elemChecks.Store(t, err)
	}
	return err
}

// maxElemDepth bounds the nesting pointerIn follows; a deeper type is
// refused (no real element type nests that deep).
const maxElemDepth = 100

// pointerIn reports whether t holds a Go pointer and, if so, where: a path
// such as ".Next" or "[0].Name (string)", empty when t itself is one.
func pointerIn(t reflect.Type, path string, depth int) (string, bool) {
	if depth > maxElemDepth {
		return path + " (nested too deep)", true
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return "", false
	case reflect.Array:
		if t.Len() == 0 {
			return "", false // holds nothing
		}
		return pointerIn(t.Elem(), path+"[0]", depth+1)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if where, bad := pointerIn(f.Type, path+"."+f.Name, depth+1); bad {
				return where, true
			}
		}
		return "", false
	}
	if path == "" {
		return "", true
	}
	return path + " " + t.String(), true
}

var (
	// ErrNegativeSize is returned for a negative size or length.
	ErrNegativeSize = errors.New("hostmem: negative size")
	// ErrTooLarge is returned for a size past what any address space can
	// hold (MaxBytes), or a length whose byte size overflows.
	ErrTooLarge = errors.New("hostmem: size past the address space")
)

// MaxBytes is the largest size ByteSize accepts: 256 TiB, more than a
// process can map on any platform CUDA supports.
const MaxBytes = 1 << 48

// ByteSize returns the byte size of n elements of elemSize bytes, checked:
// a negative n is ErrNegativeSize; a product that overflows or exceeds
// MaxBytes is ErrTooLarge, each with a message that says which. Zero is
// returned as it is: the caller decides whether empty memory is an error.
func ByteSize(n int, elemSize uintptr) (uintptr, error) {
	switch {
	case n < 0:
		return 0, fmt.Errorf("%w: %d", ErrNegativeSize, n)
	case elemSize != 0 && uint64(n) > math.MaxUint64/uint64(elemSize):
		return 0, fmt.Errorf("%w: %d elements of %d bytes overflow a 64-bit size", ErrTooLarge, n, elemSize)
	}
	b := uint64(n) * uint64(elemSize)
	if b > MaxBytes || b > uint64(^uintptr(0)) {
		return 0, fmt.Errorf("%w: %d bytes (%d elements of %d bytes); at most %d", ErrTooLarge, b, n, elemSize, uint64(MaxBytes))
	}
	return uintptr(b), nil
}
