//go:build !gpu && linux

package tests

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/purecuda/purecuda/libcuda"
)

// onGPU: the suite runs on the simulator.
const onGPU = false

//go:embed sim/sim.c
var simSource embed.FS

// setupDriver builds the simulator (once per source hash, in the user's
// cache directory) and points libcuda at it.
func setupDriver() error {
	so, err := buildSimulator()
	if err != nil {
		return err
	}
	if err := os.Setenv(libcuda.EnvLibrary, so); err != nil {
		return err
	}
	// Two simulated devices, for the tests of several GPUs.
	if err := os.Setenv("PURECUDA_SIM_DEVICES", "2"); err != nil {
		return err
	}
	if err := libcuda.Load(); err != nil {
		return err
	}
	if lib, _ := libcuda.Loaded(); lib.Path != so {
		return fmt.Errorf("loaded %s instead of the simulator %s", lib.Path, so)
	}
	return nil
}

// SimLibrary is the path of the simulator library once built.
var simLibrary string

func buildSimulator() (string, error) {
	src, err := simSource.ReadFile("sim/sim.c")
	if err != nil {
		return "", err
	}
	cc := findCompiler()
	if cc == "" {
		return "", errors.New("no C compiler (cc, gcc or clang; or $CC) to build the simulator")
	}
	sum := sha256.Sum256(append([]byte(cc+"\x00"), src...))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "purecuda", "sim-"+hex.EncodeToString(sum[:8]))
	so := filepath.Join(dir, "libcudasim.so")
	if _, err := os.Stat(so); err == nil {
		simLibrary = so
		return so, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	c := filepath.Join(tmp, "sim.c")
	if err := os.WriteFile(c, src, 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(tmp, "libcudasim.so")
	if msg, err := exec.Command(cc, "-O2", "-g", "-shared", "-fPIC", "-pthread", "-o", out, c).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the simulator with %s: %v\n%s", cc, err, msg)
	}
	// Rename is atomic: concurrent test binaries see all of it or nothing.
	if err := os.Rename(out, so); err != nil {
		return "", err
	}
	simLibrary = so
	return so, nil
}

func findCompiler() string {
	for _, c := range []string{os.Getenv("CC"), "cc", "gcc", "clang"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// simFailNext makes the next count calls of the driver function named
// (base name, e.g. "cuMemHostUnregister") fail with code, on the simulator.
func simFailNext(t testing.TB, name string, count int, code libcuda.Result) {
	t.Helper()
	h, err := purego.Dlopen(simLibrary, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	var failNext func(name string, count, code int32) int32
	purego.RegisterLibFunc(&failNext, h, "sim_fail_next")
	if r := failNext(name, int32(count), int32(code)); r != 0 {
		t.Fatalf("sim_fail_next(%s) = %d", name, r)
	}
}

// simStat returns the simulator's counter of that name (see sim_stat in
// sim.c); cumulative counters count since the library was loaded.
func simStat(t testing.TB, name string) int64 {
	t.Helper()
	h, err := purego.Dlopen(simLibrary, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	var stat func(name string) int64
	purego.RegisterLibFunc(&stat, h, "sim_stat")
	v := stat(name)
	if v < 0 {
		t.Fatalf("sim_stat(%s): no such counter", name)
	}
	return v
}

// stressCycles is the number of wrap/use/free cycles of the hostmem stress
// test on the simulator.
const stressCycles = 100_000
