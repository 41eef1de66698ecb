//go:build !gpu && !linux && !windows

package testenv

import (
	"errors"
	"runtime"
)

func buildSimulator() (string, error) {
	return "", errors.New("the simulator is built on Linux and Windows only (" + runtime.GOOS + ")")
}
