//go:build !gpu

// Package nvmlsim loads the NVML simulator (internal/testenv/nvmlsim/sim/nvmlsim.c)
// for package nvml's tests and the tests that cross packages: it builds
// it with the system C compiler (once per source and compiler, in the
// user's cache directory) on Linux, or takes the DLL that
// $PURECUDA_NVMLSIM_DLL names on Windows (built by .ci/windows-wine), and
// points package nvml at it through PURECUDA_LIBNVML. Its test hooks post
// events and set what the devices show.
//
// It imports neither package nvml nor package libcuda: nvml stands on its
// own, and a test of it needs no driver.
package nvmlsim

import (
	"embed"
	"fmt"
	"os"
	"sync"

	"github.com/purecuda/purecuda/internal/testenv/cbuild"
	"github.com/purecuda/purecuda/internal/testenv/harness"
)

// source is the simulator, sim/nvmlsim.c.
//
//go:embed sim/nvmlsim.c
var source embed.FS

// EnvDLL names the environment variable that gives the path of the NVML
// simulator built as a Windows DLL (nvmlsim.c compiled with mingw-w64, as
// .ci/windows-wine does).
const EnvDLL = "PURECUDA_NVMLSIM_DLL"

// Devices is the number of devices the simulator shows.
const Devices = 2

// EnvLibrary is package nvml's variable for the library to load.
const EnvLibrary = "PURECUDA_LIBNVML"

// EnvRequireSim, set to 1 (as in CI), turns a simulator that cannot be
// built into a failure instead of a skip.
const EnvRequireSim = "PURECUDA_REQUIRE_SIM"

var setup struct {
	once sync.Once
	path string
	err  error
	h    hooks
}

// hooks are the simulator's test functions.
type hooks struct {
	postEvent    func(index uint32, typ, data uint64) int32
	setProcesses func(index, n uint32) int32
	stat         func(name string) int64
	failNext     func(name string, skip, count, ret int32) int32
}

// Setup builds or finds the simulator, points PURECUDA_LIBNVML at it and
// opens its hooks; it returns the library's path. Later calls return the
// first one's result. Call it before package nvml loads its library.
func Setup() (string, error) {
	setup.once.Do(func() {
		setup.path, setup.err = cbuild.LoadStub(source, cbuild.Stub{
			Name:    "nvmlsim", // on Windows: $PURECUDA_NVMLSIM_DLL (EnvDLL)
			Sources: []string{"sim/nvmlsim.c"},
			Env:     []string{EnvLibrary},
			Hooks: []cbuild.Hook{{Name: "nvmlsim_post_event", Fn: &setup.h.postEvent},
				{Name: "nvmlsim_set_processes", Fn: &setup.h.setProcesses},
				{Name: "nvmlsim_stat", Fn: &setup.h.stat},
				{Name: "nvmlsim_fail_next", Fn: &setup.h.failNext}},
			Stat: "nvmlsim_stat",
			Live: map[string]string{"NVML event sets": "sets", "NVML initializations (nvmlInit without nvmlShutdown)": "init"},
		})
	})
	return setup.path, setup.err
}

// Main is TestMain's body for a package whose tests need the simulator:
// without a C compiler it says so and exits 0 before any test runs
// (unless PURECUDA_REQUIRE_SIM=1, which makes it a failure). It runs the
// tests (run, e.g. m.Run) as harness.Run does, under its watchdog and
// followed by its leak check: a live NVML event set or an NVML left
// initialized fails the binary, and so does anything else watched
// (harness.Watch).
func Main(run func() int) {
	if _, err := Setup(); err != nil {
		if os.Getenv(EnvRequireSim) == "1" {
			fmt.Fprintf(os.Stderr, "NVML simulator not built: %v (%s=1 makes this a failure)\n", err, EnvRequireSim)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "NVML simulator not built: %v; install gcc to run these tests\n", err)
		os.Exit(0)
	}
	os.Exit(harness.Run(runner(run), nil))
}

// runner is a run function as a harness.M.
type runner func() int

func (r runner) Run() int { return r() }

func mustSetup() hooks {
	if _, err := Setup(); err != nil {
		panic("nvmlsim: Setup failed: " + err.Error())
	}
	return setup.h
}

// PostEvent posts an event of the device of that index (its type, one
// NvmlEventType* bit, and its data) to every event set that registered
// the device for the type; it returns how many took it.
func PostEvent(index int, typ, data uint64) int {
	return int(mustSetup().postEvent(uint32(index), typ, data))
}

// SetProcesses makes the device of that index show n compute processes,
// pids 1000 to 1000+n-1, process k holding k+1 MiB.
func SetProcesses(index, n int) error {
	if r := mustSetup().setProcesses(uint32(index), uint32(n)); r != 0 {
		return fmt.Errorf("nvmlsim_set_processes(%d, %d) = %d", index, n, r)
	}
	return nil
}

// Stat returns a counter of the simulator: "init" (NVML's init count now),
// "inits", "shutdowns" (calls ever), "sets" (live event sets), "waiting"
// (event waits in progress), "queued" (events posted to live sets and not
// yet taken by a wait).
func Stat(name string) int64 {
	v := mustSetup().stat(name)
	if v < 0 {
		panic("nvmlsim: no counter " + name)
	}
	return v
}

// FailNext makes the next count calls of the NVML function named (its C
// name, e.g. "nvmlEventSetWait_v2") return ret, an nvmlReturn_t; count 0
// clears what is left of it.
func FailNext(name string, count, ret int) error { return FailAfter(name, 0, count, ret) }

// FailAfter is FailNext after skip calls that pass.
func FailAfter(name string, skip, count, ret int) error {
	if r := mustSetup().failNext(name, int32(skip), int32(count), int32(ret)); r != 0 {
		return fmt.Errorf("nvmlsim_fail_next(%s): no room for another failure", name)
	}
	return nil
}
