//go:build linux && cgo

package main

/*
#include <stdint.h>
typedef int (*ctx_get_fn)(void **);
typedef int (*stream_query_fn)(void *);
static int call_ctx_get(uintptr_t fn, void **c) { return ((ctx_get_fn)fn)(c); }
static int call_stream_query(uintptr_t fn, uintptr_t s) { return ((stream_query_fn)fn)((void *)s); }
*/
import "C"

import (
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	bench "github.com/purecuda/purecuda/internal/benchrows"
	"github.com/purecuda/purecuda/libcuda"
)

// In a cgo build, the same operations through cgo: a C helper that calls
// the driver's function pointer, as cgo-based bindings do.
func init() {
	extraRows = append(extraRows, func(f *bench.Fixture) []bench.Row {
		lib, _ := libcuda.Loaded()
		h, err := purego.Dlopen(lib.Path, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			return nil
		}
		get, err1 := purego.Dlsym(h, "cuCtxGetCurrent")
		query, err2 := purego.Dlsym(h, "cuStreamQuery")
		if err1 != nil || err2 != nil {
			return nil
		}
		return []bench.Row{
			{Op: "cuCtxGetCurrent", Way: "cgo", F: func(b *testing.B) {
				f.OnThread(b, func(b *testing.B) {
					var c unsafe.Pointer
					for b.Loop() {
						if r := C.call_ctx_get(C.uintptr_t(get), &c); r != 0 {
							b.Fatal(libcuda.Result(r))
						}
					}
				})
			}},
			{Op: "cuStreamQuery (idle)", Way: "cgo", F: func(b *testing.B) {
				f.OnThread(b, func(b *testing.B) {
					for b.Loop() {
						if r := C.call_stream_query(C.uintptr_t(query), C.uintptr_t(f.Stream)); r != 0 {
							b.Fatal(libcuda.Result(r))
						}
					}
				})
			}},
		}
	})
}
