package cuda

import (
	"fmt"
	"reflect"
	gosync "sync"
)

// checkElem says whether values of type t can live in device memory: t
// must have a size and hold no Go pointers (no pointers, strings, slices,
// maps, channels, functions or interfaces, at any depth), since the
// garbage collector neither sees nor updates memory on the device.
func checkElem(t reflect.Type) error {
	if v, ok := elemChecks.Load(t); ok {
		if v == nil {
			return nil
		}
		return v.(error)
	}
	err := elemCheck(t, t)
	if err == nil && t.Size() == 0 {
		err = fmt.Errorf("%w: %v has size 0", ErrElemType, t)
	}
	if err != nil {
		elemChecks.Store(t, err)
	} else {
		elemChecks.Store(t, nil)
	}
	return err
}

// elemChecks caches checkElem's answers: reflect.Type -> nil or error.
var elemChecks gosync.Map

func elemCheck(top, t reflect.Type) error {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return nil
	case reflect.Array:
		return elemCheck(top, t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if err := elemCheck(top, t.Field(i).Type); err != nil {
				return err
			}
		}
		return nil
	}
	if top == t {
		return fmt.Errorf("%w: %v holds Go pointers", ErrElemType, t)
	}
	return fmt.Errorf("%w: %v holds Go pointers (a %v)", ErrElemType, top, t)
}
