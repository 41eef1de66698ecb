//go:build (linux && (amd64 || arm64)) || (windows && amd64)

package calltest

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"
)

// TestMain points the package's loader at the fixture: on Linux built here
// from c/calltest.c by $CC (or cc, gcc, clang); on Windows the DLL that
// $PURECUDA_CALLTEST_DLL names (.ci/windows-wine builds it with mingw-w64).
// No fixture fails the tests under PURECUDA_REQUIRE_SIM=1 (as in CI).
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

var setupErr error

func run(m *testing.M) int {
	if runtime.GOOS == "windows" {
		if p := os.Getenv("PURECUDA_CALLTEST_DLL"); p != "" {
			os.Setenv(EnvLibrary, p)
		} else {
			setupErr = errors.New("PURECUDA_CALLTEST_DLL is not set: build c/calltest.c as a DLL with mingw-w64 (see .ci/windows-wine)")
		}
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "calltest")
	if err != nil {
		setupErr = err
		return m.Run()
	}
	defer os.RemoveAll(dir)
	so := filepath.Join(dir, "libcalltest.so")
	cc := ""
	for _, c := range []string{os.Getenv("CC"), "cc", "gcc", "clang"} {
		if p, err := exec.LookPath(c); c != "" && err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		setupErr = errors.New("no C compiler (cc, gcc, clang) to build c/calltest.c")
		return m.Run()
	}
	if out, err := exec.Command(cc, "-O2", "-Wall", "-Wextra", "-shared", "-fPIC", "-o", so, filepath.Join("c", "calltest.c")).CombinedOutput(); err != nil {
		setupErr = errors.New("building c/calltest.c: " + err.Error() + "\n" + string(out))
		return m.Run()
	}
	os.Setenv(EnvLibrary, so)
	return m.Run()
}

func fixtureLoaded(t *testing.T) {
	t.Helper()
	if setupErr != nil {
		if os.Getenv("PURECUDA_REQUIRE_SIM") == "1" {
			t.Fatal(setupErr)
		}
		t.Skip(setupErr)
	}
	if _, err := lazy.Load(); err != nil {
		t.Fatal(err)
	}
}

func TestCallFloatsBesidePointersAsCuRANDNormal(t *testing.T) {
	fixtureLoaded(t)
	out := make([]float32, 2)
	if err := Normal(0x51, &out[0], 0x123456789a, -1.5, 0.25); err != nil {
		t.Fatalf("Normal: %v", err)
	}
	if out[0] != -0.375 || out[1] != float32(0x123456789a) {
		t.Fatalf("written through the pointer: %v, want [-0.375 %v]", out, float32(0x123456789a))
	}
}

func TestCallDoubleBesidePointerAsCuRANDPoisson(t *testing.T) {
	fixtureLoaded(t)
	var out [3]uint32 // on the stack: the pointer-typed field keeps it right
	if err := Poisson(0x52, &out[0], 3, 1e300); err != nil {
		t.Fatalf("Poisson: %v", err)
	}
	if out != [3]uint32{0xfedc0000, 0xfedc0001, 0xfedc0002} {
		t.Fatalf("written through the pointer: %#x", out)
	}
}

func TestCallMixesIntegersFloatsDoublesAndPointers(t *testing.T) {
	fixtureLoaded(t)
	var out int32
	negZero := float32(math.Copysign(0, -1))
	if err := Mixed(-7, 3.5, 1.0/3.0, unsafe.Pointer(&out), negZero, 0xfedcba9876543210, 6.02214076e23, 16777215, &out); err != nil {
		t.Fatalf("Mixed: %v", err)
	}
	if out != 42 {
		t.Fatalf("written through the pointer: %d, want 42", out)
	}
}

// TestCallWideReachesTheStack passes eight floating-point arguments among
// ten integers and a pointer: the integers past the registers go on the
// stack on every system, and on Windows the floats past the fourth too.
func TestCallWideReachesTheStack(t *testing.T) {
	fixtureLoaded(t)
	var ints [10]int64
	for k := range ints {
		if k%2 == 0 {
			ints[k] = -int64(k + 1)
		} else {
			ints[k] = 0x100000000*int64(k+1) + int64(k)
		}
	}
	var fl [8]float64
	for k := range fl {
		v := float64(k+1) + 0.5
		if k%2 == 1 {
			v += 1e-12
		}
		fl[k] = v
	}
	var sum float64
	err := Wide(int32(ints[0]), float32(fl[0]), ints[1], fl[1], int32(ints[2]), float32(fl[2]),
		ints[3], fl[3], int32(ints[4]), float32(fl[4]), ints[5],
		fl[5], int32(ints[6]), float32(fl[6]), ints[7], fl[7],
		int32(ints[8]), ints[9], &sum)
	if err != nil {
		t.Fatalf("Wide: %v", err)
	}
	var want float64
	for _, v := range fl {
		want += v
	}
	if sum != want {
		t.Fatalf("sum written back %v, want %v", sum, want)
	}
}

func TestCallFiveDoubles(t *testing.T) {
	fixtureLoaded(t)
	var out int32
	if err := Doubles(1e-300, -2, 3.25, 4e10, 5.5, &out); err != nil {
		t.Fatalf("Doubles: %v", err)
	}
	if out != 5 {
		t.Fatalf("written through the pointer: %d, want 5", out)
	}
}

// TestCallWrongValueIsReported checks the fixture itself: a value off by
// one bit comes back as the position of the argument.
func TestCallWrongValueIsReported(t *testing.T) {
	fixtureLoaded(t)
	out := make([]float32, 2)
	err := Normal(0x51, &out[0], 0x123456789a, -1.5, math.Nextafter32(0.25, 1))
	if r, ok := err.(Status); !ok || r != 104 {
		t.Fatalf("Normal with a wrong stddev: %v, want status 104", err)
	}
}

func TestCallFloatAllocatesNothing(t *testing.T) {
	fixtureLoaded(t)
	out := make([]float32, 2)
	allocs := testing.AllocsPerRun(100, func() {
		_ = Normal(0x51, &out[0], 0x123456789a, -1.5, 0.25)
	})
	if allocs != 0 {
		t.Fatalf("a call allocates %v times", allocs)
	}
}
