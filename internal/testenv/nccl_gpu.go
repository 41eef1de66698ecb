//go:build gpu

package testenv

import "testing"

// NCCLSimDevices: under -tags gpu the devices are the machine's.
const NCCLSimDevices = 0

// MainNCCL is Main for package nccl's tests; under -tags gpu they use the
// real NCCL, found as package nccl looks for it.
func MainNCCL(m *testing.M, opts ...Option) { mainWith(m, nil, opts) }

// NCCLStat reads a counter of the NCCL stand-in: under -tags gpu there is
// none, and it fails t.
func NCCLStat(t testing.TB, name string) int64 {
	t.Helper()
	t.Fatalf("the NCCL stand-in's counter %s: not on the GPU", name)
	return 0
}
