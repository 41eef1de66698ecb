//go:build !gpu

package testenv_test

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/cbuild"
	"github.com/purecuda/purecuda/internal/testenv/harness"
	"github.com/purecuda/purecuda/internal/testenv/nvmlsim"
	"github.com/purecuda/purecuda/libcuda"
)

// runChild runs the test named in a child process of the test binary with
// the leak check on (a child skips it otherwise) and env added, and
// returns its output and exit code. The child's TestMain is this
// package's: testenv.Main.
func runChild(t *testing.T, name string, env ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(name)+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{harness.EnvChild + "=" + name, harness.EnvLeakCheckChild + "=1", harness.EnvCheckWait + "=200ms"}, env...)...)
	cmd.WaitDelay = time.Second
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		defer close(done)
		out, err = cmd.CombinedOutput()
	}()
	testenv.Recv(t, done, "the child process "+name)
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running the child %s: %v", name, err)
	}
	if !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("the child did not pass %s:\n%s", name, out)
	}
	return string(out), code
}

// inChild says whether this process is the child that runs the test t.
func inChild(t *testing.T) bool { return os.Getenv(harness.EnvChild) == t.Name() }

// A package whose tests leave a stream fails, after passing tests, with a
// message that says what leaked and how many; so for each kind of object
// the simulator and the stand-ins count.
func TestLeakCheckFailsAPackageThatLeavesAnObject(t *testing.T) {
	name := "TestLeakCheckFailsAPackageThatLeavesAnObject"
	if inChild(t) {
		leakers[os.Getenv("LEAK_KIND")](t)
		return
	}
	for _, kind := range slices.Sorted(maps.Keys(leakers)) {
		t.Run(kind, func(t *testing.T) {
			out, code := runChild(t, name, "LEAK_KIND="+kind)
			if code == 0 || !strings.Contains(out, "leak check: after the tests ") || !strings.Contains(out, " 1 "+kind+" live") {
				t.Fatalf("a child that left one of the %s exited with %d, want a failure naming 1 of them:\n%s", kind, code, out)
			}
		})
	}
}

// kept keeps what a leaking child registered reachable.
var kept []byte

// leakers leave one object each, by the name the check gives them.
var leakers = map[string]func(t *testing.T){
	"streams": func(t *testing.T) {
		testenv.OnPrimary(t, 0)
		var s libcuda.Stream
		testenv.Must(t, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	},
	"events": func(t *testing.T) {
		testenv.OnPrimary(t, 0)
		var e libcuda.Event
		testenv.Must(t, libcuda.EventCreate(&e, 0))
	},
	"device allocations": func(t *testing.T) {
		testenv.OnPrimary(t, 0)
		var d libcuda.Deviceptr
		testenv.Must(t, libcuda.MemAlloc(&d, 256))
	},
	"host allocations": func(t *testing.T) {
		testenv.OnPrimary(t, 0)
		var p unsafe.Pointer
		testenv.Must(t, libcuda.MemHostAlloc(&p, 256, 0))
	},
	"registered host ranges": func(t *testing.T) {
		testenv.OnPrimary(t, 0)
		kept = make([]byte, 1<<16)
		testenv.Must(t, libcuda.MemHostRegister(unsafe.Pointer(&kept[0]), uint64(len(kept)), 0))
	},
	"graphs": func(t *testing.T) {
		testenv.OnPrimary(t, 0)
		var g libcuda.Graph
		testenv.Must(t, libcuda.GraphCreate(&g, 0))
	},
	"executable graphs": func(t *testing.T) {
		testenv.OnPrimary(t, 0)
		var g libcuda.Graph
		testenv.Must(t, libcuda.GraphCreate(&g, 0))
		var e libcuda.GraphExec
		testenv.Must(t, libcuda.GraphInstantiateWithFlags(&e, g, 0))
		testenv.Must(t, libcuda.GraphDestroy(g))
	},
	"modules": func(t *testing.T) {
		testenv.OnPrimary(t, 0)
		_, err := libcuda.LoadModule(kernels.PTX)
		testenv.Must(t, err)
	},
	"cuBLAS and cuBLASLt handles": func(t *testing.T) {
		testenv.OnPrimary(t, 0)
		var create func(h *uintptr) int32
		testenv.Must(t, cbuild.Bind(testenv.BLASLibrary(), cbuild.Hook{Name: "cublasCreate_v2", Fn: &create}))
		var h uintptr
		if r := create(&h); r != 0 {
			t.Fatalf("cublasCreate_v2 = %d", r)
		}
	},
	"NVML event sets": func(t *testing.T) {
		lib, err := nvmlsim.Setup()
		testenv.Must(t, err)
		var initNVML func() int32
		var create func(set *uintptr) int32
		testenv.Must(t, cbuild.Bind(lib, cbuild.Hook{Name: "nvmlInit_v2", Fn: &initNVML}, cbuild.Hook{Name: "nvmlEventSetCreate", Fn: &create}))
		var set uintptr
		if r := initNVML(); r != 0 {
			t.Fatalf("nvmlInit_v2 = %d", r)
		}
		if r := create(&set); r != 0 {
			t.Fatalf("nvmlEventSetCreate = %d", r)
		}
	},
}

// The same child passes when its test destroys the stream: the check fails
// only what leaks.
func TestLeakCheckPassesAPackageThatClosesAll(t *testing.T) {
	if inChild(t) {
		testenv.OnPrimary(t, 0)
		testenv.NewStream(t)
		return
	}
	out, code := runChild(t, t.Name())
	if code != 0 || strings.Contains(out, "leak check") {
		t.Fatalf("a child that destroyed its stream exited with %d:\n%s", code, out)
	}
}

// A count above the package's Allow fails; one at it passes.
func TestLeakCheckBaseline(t *testing.T) {
	if inChild(t) {
		harness.Allow("events", 1, "made to be left by this test")
		testenv.OnPrimary(t, 0)
		n := 1
		if os.Getenv("LEAK_EVENTS") == "2" {
			n = 2
		}
		for range n {
			var e libcuda.Event
			testenv.Must(t, libcuda.EventCreate(&e, 0)) // never destroyed
		}
		return
	}
	if out, code := runChild(t, t.Name(), "LEAK_EVENTS=1"); code != 0 {
		t.Fatalf("a child that left the one event allowed exited with %d:\n%s", code, out)
	}
	out, code := runChild(t, t.Name(), "LEAK_EVENTS=2")
	if code == 0 || !strings.Contains(out, "2 events live, 1 allowed (made to be left by this test)") {
		t.Fatalf("a child that left two events, one allowed, exited with %d:\n%s", code, out)
	}
}

// The watchdog ends a hung binary with every goroutine's stack.
func TestWatchdogEndsAHungBinary(t *testing.T) {
	if inChild(t) {
		block := make(chan struct{})
		if os.Getenv("HANG") == "1" {
			<-block // hangs here: the watchdog must end the process
		}
		return
	}
	out, code := runChild(t, t.Name(), "HANG=0", harness.EnvWatchdog+"=2s")
	if code != 0 {
		t.Fatalf("a child that returned at once exited with %d:\n%s", code, out)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), harness.EnvChild+"="+t.Name(), "HANG=1", harness.EnvWatchdog+"=1s")
	cmd.WaitDelay = time.Second
	done := make(chan error, 1)
	var b []byte
	go func() {
		var err error
		b, err = cmd.CombinedOutput()
		done <- err
	}()
	err := testenv.Recv(t, done, "the hung child to be ended by its watchdog")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 ||
		!strings.Contains(string(b), "watchdog: the test binary still runs after 1s") ||
		!strings.Contains(string(b), "TestWatchdogEndsAHungBinary") {
		t.Fatalf("the hung child: %v, want exit status 2 with the watchdog's message and the hung test's stack:\n%s", err, b)
	}
}
