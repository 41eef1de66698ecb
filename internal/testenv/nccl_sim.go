//go:build !gpu && linux

package testenv

import (
	"os"
	"testing"
)

// The NCCL stand-in (sim/ncclsim.c) answers for libnccl.so.2 in the tests
// of package nccl: it is linked with the simulator the tests loaded, so its
// work runs on that simulator's streams and memory, and its hub connects
// ranks of this process and of child processes (Linux only).

// NCCLSimDevices is the number of devices the simulator shows package
// nccl's tests: four, for communicators of four ranks in one process.
const NCCLSimDevices = 4

// MainNCCL is Main for package nccl's tests: on the simulator it also
// builds the NCCL stand-in, points PURECUDA_LIBNCCL at it, and shows the
// tests NCCLSimDevices devices; the leak check counts its live
// communicators too.
func MainNCCL(m *testing.M, opts ...Option) { mainWith(m, setupNCCL, opts) }

// ncclLibrary is the stand-in's path once set up.
var ncclLibrary string

func setupNCCL() error {
	lib, err := LoadStub(Stub{
		Name:    "ncclsim",
		Sources: []string{"ncclsim.c"},
		Links:   []string{simLibrary, "m"},
		Env:     []string{"PURECUDA_LIBNCCL"},
		Hooks:   []Hook{{Name: "ncclsim_stat", Fn: &ncclHooks.stat}},
		Stat:    "ncclsim_stat",
		Live:    map[string]string{"NCCL communicators": "live_comms"},
	})
	if err != nil {
		return err
	}
	// Read by the simulator's cuInit, which runs after this.
	if err := os.Setenv("PURECUDA_SIM_DEVICES", "4"); err != nil {
		return err
	}
	ncclLibrary = lib
	return nil
}

var ncclHooks struct {
	stat func(name string) int64
}

// NCCLStat reads a counter of the NCCL stand-in (see ncclsim.c:
// live_comms, inits, destroys, aborts, collectives, enqueued,
// group_misuse, group_depth, groups_open, remote_errors).
func NCCLStat(t testing.TB, name string) int64 {
	t.Helper()
	if ncclLibrary == "" {
		t.Fatal("the NCCL stand-in's hooks: the stand-in is not loaded (testenv.MainNCCL loads it)")
	}
	v := ncclHooks.stat(name)
	if v < 0 {
		t.Fatalf("the NCCL stand-in has no counter %q", name)
	}
	return v
}
