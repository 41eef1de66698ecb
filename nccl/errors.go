package nccl

import (
	"errors"
	"fmt"
	"unsafe"
)

// ErrAborted is matched (errors.Is) by the error of every call on a
// communicator that was aborted: by Abort, by its context's end in a
// wait, by a failure of a peer, or by the garbage collector.
var ErrAborted = errors.New("nccl: communicator aborted")

// callErr names the NCCL call that failed and adds NCCL's own text of
// the failure (ncclGetLastError) to its Result, which errors.Is still
// matches. Load and symbol errors are returned as they are.
func callErr(sym string, comm Handle, err error) error {
	if err == nil {
		return nil
	}
	var se *SymbolError
	var le *LoadError
	if errors.As(err, &se) || errors.As(err, &le) || errors.Is(err, ErrNoLibrary) {
		return err
	}
	var r Result
	if errors.As(err, &r) {
		if text := lastError(comm); text != "" {
			return fmt.Errorf("nccl: %s: %w: %s", sym, err, text)
		}
	}
	return fmt.Errorf("nccl: %s: %w", sym, err)
}

// lastError is ncclGetLastError's text, or "".
func lastError(comm Handle) string {
	p, err := GetLastError(comm)
	if err != nil || p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 && n < 4096 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
