package nvml

import (
	"strconv"
	"sync"
	"unsafe"
)

// Return is nvmlReturn_t, the status every NVML call returns. A Return
// other than NVML_SUCCESS is an error; compare with errors.Is:
//
//	if errors.Is(err, nvml.NVML_ERROR_NOT_SUPPORTED) { ... }
//
// Its message is the C name and the number, e.g.
// "NVML_ERROR_NOT_SUPPORTED (3)", and the library's own text
// (nvmlErrorString) where that says more than the name.
//
// The type, its constants and its String method are generated from nvml.h
// (zconst.go).
func (r Return) Error() string {
	s := r.String() + " (" + strconv.Itoa(int(r)) + ")"
	if d := r.Description(); d != "" && d != r.String() {
		s += ": " + d
	}
	return s
}

// Description is the library's text for r (nvmlErrorString), or "" when
// no library is loaded.
func (r Return) Description() string {
	if v, ok := descriptions.Load(r); ok {
		return v.(string)
	}
	if loaded() == nil {
		return ""
	}
	p, err := ErrorString(r)
	if err != nil || p == nil {
		return ""
	}
	d := goString(p)
	descriptions.Store(r, d)
	return d
}

// descriptions caches nvmlErrorString's answers.
var descriptions sync.Map // Return -> string

// boxedResults holds every known Return already converted to error, so
// that returning a failure allocates nothing.
var boxedResults = func() map[Return]error {
	m := make(map[Return]error, len(resultValues))
	for _, r := range resultValues {
		m[r] = r
	}
	return m
}()

func (r Return) boxed() error {
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

// cString is the text of a NUL-terminated C string in b (all of b if it
// holds no NUL).
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
