package cublas_test

import (
	"errors"

	"github.com/purecuda/purecuda/cuda"
)

func isClosed(err error) bool { return errors.Is(err, cuda.ErrClosed) }
func isFreed(err error) bool  { return errors.Is(err, cuda.ErrFreed) }
