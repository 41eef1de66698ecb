package libcuda

import (
	"strconv"
	"sync"
	"unsafe"
)

// Result is CUresult, the status every driver call returns. A Result other
// than CUDA_SUCCESS is an error; compare with errors.Is:
//
//	if errors.Is(err, libcuda.CUDA_ERROR_NOT_READY) { ... }
//
// Its message carries the C name, the number and the driver's own
// description, e.g. "CUDA_ERROR_NOT_READY (600): device not ready".
//
// The type, its constants and its String method are generated from cuda.h
// (zconst.go).
func (r Result) Error() string {
	s := r.String() + " (" + strconv.Itoa(int(r)) + ")"
	if d := r.Description(); d != "" {
		s += ": " + d
	}
	return s
}

// Description is the driver's text for r (cuGetErrorString), or "" when
// no driver is loaded or the driver does not know r.
func (r Result) Description() string {
	if v, ok := descriptions.Load(r); ok {
		return v.(string)
	}
	if loaded.Load() == nil {
		return ""
	}
	var p *byte
	if GetErrorString(r, &p) != nil || p == nil {
		return ""
	}
	d := goString(p)
	descriptions.Store(r, d)
	return d
}

// descriptions caches cuGetErrorString's answers.
var descriptions sync.Map // Result -> string

// boxedResults holds every known Result already converted to error, so
// that returning a failure allocates nothing.
var boxedResults = func() map[Result]error {
	m := make(map[Result]error, len(resultValues))
	for _, r := range resultValues {
		m[r] = r
	}
	return m
}()

func (r Result) boxed() error {
	if e, ok := boxedResults[r]; ok {
		return e
	}
	return r
}

// goString copies the NUL-terminated C string at p.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
