//go:build !gpu && !linux

package testenv

import (
	"testing"
)

// NCCLSimDevices is the number of devices the simulator shows package
// nccl's tests.
const NCCLSimDevices = SimDevices

// MainNCCL is Main for package nccl's tests. NCCL and its stand-in exist
// on Linux only: elsewhere the tests run without them, and check that the
// package says NCCL is unavailable.
func MainNCCL(m *testing.M, opts ...Option) { mainWith(m, nil, opts) }

// NCCLStat fails t: there is no stand-in on this system.
func NCCLStat(t testing.TB, name string) int64 {
	t.Helper()
	t.Fatalf("the NCCL stand-in's counter %s: no stand-in on this system", name)
	return 0
}
