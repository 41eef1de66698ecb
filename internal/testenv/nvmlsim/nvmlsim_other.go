//go:build !gpu && !linux && !windows

package nvmlsim

import (
	"errors"
	"runtime"
)

func library() (string, error) {
	return "", errors.New("the NVML simulator is built on Linux and Windows only (" + runtime.GOOS + ")")
}
