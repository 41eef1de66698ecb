//go:build !linux && !windows

package cbuild

import (
	"errors"
	"runtime"
)

var errSystem = errors.New("the C stand-ins are built on Linux and Windows only (" + runtime.GOOS + ")")

// Build fails: the stand-ins are built on Linux only.
func Build(s Source) (string, error) { return "", errSystem }

func buildStub(name string, files []file, links []string) (string, error) { return "", errSystem }

// Bind fails: there are no stand-ins on this system.
func Bind(lib string, hooks ...Hook) error { return errSystem }
