package cuda

import (
	"fmt"
	"reflect"

	"github.com/purecuda/purecuda/hostmem"
)

// checkElem says whether values of type t can live in device memory: t
// must have a size and hold no Go pointers (hostmem.CheckElem, cached per
// type), since the garbage collector neither sees nor updates memory on the
// device.
func checkElem(t reflect.Type) error {
	if err := hostmem.CheckElem(t); err != nil {
		return fmt.Errorf("%w: %v", ErrElemType, err)
	}
	if t.Size() == 0 {
		return fmt.Errorf("%w: %v has size 0", ErrElemType, t)
	}
	return nil
}
