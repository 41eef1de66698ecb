package cuda

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/purecuda/purecuda/libcuda"
)

// Global returns a module's __device__ or __constant__ variable as device
// memory (cuModuleGetGlobal): a Slice of as many elements of T as the
// variable holds, which copies fill and read and launches take as any
// Slice. Its size must be a multiple of T's: a __constant__ float k[16]
// is a Global[float32] of 16 elements, or a Global[[16]float32] of one.
//
//	bias, err := cuda.Global[float32](mod, "bias") // __constant__ float bias;
//	err = cuda.CopyToDevice(s, bias, []float32{0.5})
//
// The memory belongs to the module: it stays valid until Module.Close,
// after which every use is an error matching ErrFreed, and it is not
// freed by Free (an error). Asking for the same name again gives the same
// memory. A name the module does not declare is an error matching
// ErrNotFound. Copies and launches on several streams are tracked as a
// Slice's are; Module.Close does not wait for them: finish the work that
// uses the variable before closing the module.
func Global[T any](m *Module, name string) (Slice[T], error) {
	t := reflect.TypeFor[T]()
	if err := checkElem(t); err != nil {
		return Slice[T]{}, fmt.Errorf("cuda: Global: %w", err)
	}
	if m == nil || m.st == nil {
		return Slice[T]{}, nilErr("Module", "Global")
	}
	ms := m.st
	if !ms.mu.TryRLock() { // a Close
		return Slice[T]{}, closedErr("Module", "Global")
	}
	defer ms.mu.RUnlock()
	if ms.closed {
		return Slice[T]{}, closedErr("Module", "Global")
	}
	ms.gmu.Lock()
	defer ms.gmu.Unlock()
	a := ms.globals[name]
	if a == nil {
		var p libcuda.Deviceptr
		var bytes uint64
		cname := append([]byte(name), 0)
		err := ms.ctx.do(func() error { return libcuda.ModuleGetGlobal(&p, &bytes, ms.raw, &cname[0]) })
		switch {
		case errors.Is(err, libcuda.CUDA_ERROR_NOT_FOUND):
			return Slice[T]{}, fmt.Errorf("cuda: Global(%q): %w", name, ErrNotFound)
		case err != nil:
			return Slice[T]{}, driverErr("cuModuleGetGlobal", err)
		}
		a = &alloc{ctx: ms.ctx, ptr: p, bytes: uintptr(bytes), global: true}
		if ms.globals == nil {
			ms.globals = make(map[string]*alloc)
		}
		ms.globals[name] = a
	}
	if a.bytes == 0 || a.bytes%t.Size() != 0 {
		return Slice[T]{}, fmt.Errorf("cuda: Global[%v](%q): %d bytes are not a whole number of elements: %w", t, name, a.bytes, ErrLength)
	}
	return Slice[T]{h: &allocHandle{shared: a, class: classOf(t)}, n: int(a.bytes / t.Size())}, nil
}

// closeGlobals marks the module's globals freed, once their uses in
// progress are over. ms.mu is held for writing.
func (ms *moduleState) closeGlobals() {
	ms.gmu.Lock()
	defer ms.gmu.Unlock()
	for _, a := range ms.globals {
		a.mu.Lock()
		a.freed = true
		a.mu.Unlock()
	}
}
