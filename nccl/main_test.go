package nccl_test

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
)

func TestMain(m *testing.M) { testenv.MainNCCL(m) }
