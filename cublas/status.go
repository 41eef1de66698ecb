package cublas

import (
	"strconv"
	"sync"
	"unsafe"
)

// Status is cublasStatus_t, the status every cuBLAS (and cuBLASLt) call
// returns. A Status other than CUBLAS_STATUS_SUCCESS is an error; compare
// with errors.Is:
//
//	if errors.Is(err, cublas.CUBLAS_STATUS_INVALID_VALUE) { ... }
//
// Its message is the C name and the number, e.g.
// "CUBLAS_STATUS_INVALID_VALUE (7)", and the library's own text
// (cublasGetStatusString) where the library is loaded.
//
// The type, its constants and its String method are generated from
// cublas_api.h (zconst.go).
func (s Status) Error() string {
	msg := s.String() + " (" + strconv.Itoa(int(s)) + ")"
	if d := s.Description(); d != "" && d != s.String() {
		msg += ": " + d
	}
	return msg
}

// Description is the library's text for s (cublasGetStatusString), or ""
// when no library is loaded.
func (s Status) Description() string {
	if v, ok := descriptions.Load(s); ok {
		return v.(string)
	}
	if lazy.Loaded() == nil {
		return ""
	}
	p, err := GetStatusString(s)
	if err != nil || p == nil {
		return ""
	}
	d := goString(p)
	descriptions.Store(s, d)
	return d
}

// descriptions caches cublasGetStatusString's answers.
var descriptions sync.Map // Status -> string

// boxedStatus holds every known Status already converted to error, so that
// returning a failure allocates nothing.
var boxedStatus = func() map[Status]error {
	m := make(map[Status]error, len(resultValues))
	for _, s := range resultValues {
		m[s] = s
	}
	return m
}()

func (s Status) boxed() error {
	if e, ok := boxedStatus[s]; ok {
		return e
	}
	return s
}

// Err returns s as an error: nil for CUBLAS_STATUS_SUCCESS, else s, boxed
// without allocating (for package cublaslt, whose calls return Status).
func (s Status) Err() error {
	if s == CUBLAS_STATUS_SUCCESS {
		return nil
	}
	return s.boxed()
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
