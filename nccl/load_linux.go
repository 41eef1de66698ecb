//go:build linux

package nccl

import "github.com/purecuda/purecuda/internal/dl"

// libraryNames are NCCL's file names: the runtime's, and the development
// link a package installs.
var libraryNames = []string{"libnccl.so.2", "libnccl.so"}

// open finds and opens NCCL as Load describes, reading the environment
// through getenv.
func open(getenv func(string) string) (*ncclLibrary, error) {
	return dl.Open(search, getenv, ErrNoLibrary, identify)
}
