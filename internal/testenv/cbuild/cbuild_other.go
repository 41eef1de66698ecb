//go:build !linux && !windows

package cbuild

import (
	"errors"
	"runtime"
)

// Build fails: the stand-ins are built on Linux only.
func Build(s Source) (string, error) {
	return "", errors.New("the C stand-ins are built on Linux and Windows only (" + runtime.GOOS + ")")
}

// Bind fails: there are no stand-ins on this system.
func Bind(lib string, hooks ...Hook) error {
	return errors.New("the C stand-ins are built on Linux and Windows only (" + runtime.GOOS + ")")
}
