//go:build linux

package nccl

import (
	"fmt"

	"github.com/purecuda/purecuda/internal/dl"
)

// libraryNames are NCCL's file names: the runtime's, and the development
// link a package installs.
var libraryNames = []string{"libnccl.so.2", "libnccl.so"}

// open finds and opens NCCL as Load describes, reading the environment
// through getenv.
func open(getenv func(string) string) (*ncclLibrary, error) {
	return dl.Open(search, getenv, ErrNoLibrary, identify)
}

// identify checks that lib is NCCL 2.23 or later: it has
// ncclCommInitRankScalable, and ncclGetVersion answers.
func identify(lib dl.Library, path string) (*ncclLibrary, error) {
	if _, err := dl.HasSymbol(lib, "ncclCommInitRankScalable", "NCCL 2.23 or later"); err != nil {
		return nil, err
	}
	ver, err := dl.HasSymbol(lib, "ncclGetVersion", "NCCL")
	if err != nil {
		return nil, err
	}
	var v int32
	var f struct {
		frame
		a0 *int32
		_  [7]uintptr
	}
	f.fn, f.n = ver, 1
	f.a0 = &v
	call(&f.frame)
	if r := Result(int32(f.r)); r != Success {
		return nil, fmt.Errorf("ncclGetVersion: %w", r)
	}
	return &ncclLibrary{lib: lib, path: path, version: int(v)}, nil
}
