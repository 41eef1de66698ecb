package nvjitlink

import "strconv"

// Result is nvJitLinkResult, the status every nvJitLink call returns. A
// Result other than NVJITLINK_SUCCESS is an error; compare with errors.Is:
//
//	if errors.Is(err, nvjitlink.NVJITLINK_ERROR_PTX_COMPILE) { ... }
//
// Its message is the C name and the number, e.g.
// "NVJITLINK_ERROR_MISSING_ARCH (2)" (nvJitLink has no text of its own).
// The type, its constants and its String method are generated from
// nvJitLink.h (zconst.go).
func (r Result) Error() string { return r.String() + " (" + strconv.Itoa(int(r)) + ")" }

// boxedResult holds every known Result already converted to error, so
// that returning a failure allocates nothing.
var boxedResult = func() map[Result]error {
	m := make(map[Result]error, len(resultValues))
	for _, r := range resultValues {
		m[r] = r
	}
	return m
}()

func (r Result) boxed() error {
	if e, ok := boxedResult[r]; ok {
		return e
	}
	return r
}
