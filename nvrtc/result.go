package nvrtc

import (
	"strconv"
	"sync"
	"unsafe"
)

// Result is nvrtcResult, the status every NVRTC call returns. A Result
// other than NVRTC_SUCCESS is an error; compare with errors.Is:
//
//	if errors.Is(err, nvrtc.NVRTC_ERROR_COMPILATION) { ... }
//
// Its message is the C name and the number, e.g.
// "NVRTC_ERROR_COMPILATION (6)", and the library's own text
// (nvrtcGetErrorString) where that says more than the name.
//
// The type, its constants and its String method are generated from
// nvrtc.h (zconst.go).
func (r Result) Error() string {
	s := r.String() + " (" + strconv.Itoa(int(r)) + ")"
	if d := r.Description(); d != "" && d != r.String() {
		s += ": " + d
	}
	return s
}

// Description is the library's text for r (nvrtcGetErrorString), or ""
// when no library is loaded.
func (r Result) Description() string {
	if v, ok := descriptions.Load(r); ok {
		return v.(string)
	}
	if lazy.Loaded() == nil {
		return ""
	}
	p, err := GetErrorString(r)
	if err != nil || p == nil {
		return ""
	}
	d := goString(p)
	descriptions.Store(r, d)
	return d
}

// descriptions caches nvrtcGetErrorString's answers.
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
