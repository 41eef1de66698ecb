//go:build !gpu

package nvml

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv/nvmlsim"
)

// These tests hold package nvml to what its documentation promises, one
// promise a test, each failing when the promise breaks; the simulator
// fails the calls they name (nvmlsim.FailNext).

// failNext makes the next count calls of the NVML function named fail
// with ret, and clears what is left of it when the test ends.
func failNext(t *testing.T, name string, count int, ret Return) { failAfter(t, name, 0, count, ret) }

// failAfter is failNext after skip calls that pass.
func failAfter(t *testing.T, name string, skip, count int, ret Return) {
	t.Helper()
	if err := nvmlsim.FailAfter(name, skip, count, int(ret)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nvmlsim.FailNext(name, 0, 0) })
}

// eventually polls cond until it holds, or fails t after timeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", timeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitDone waits for a Watcher to stop, or fails t after timeout.
func waitDone(t *testing.T, w *Watcher, why string) {
	t.Helper()
	select {
	case <-w.Done():
	case <-time.After(timeout):
		t.Fatalf("the Watcher did not stop within %v of %s", timeout, why)
	}
}

// A Watcher whose context ends while it holds an event nobody reads
// stops: its send gives up with the context, the set is freed and its
// Init balanced.
func TestWatcherStopsWhenItsContextEndsWithAnEventUnread(t *testing.T) {
	initialize(t)
	d := devices(t)[0]
	sets := nvmlsim.Stat("sets")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := Watch(ctx, NvmlEventTypeXidCriticalError, d)
	if err != nil {
		t.Fatal(err)
	}
	if n := nvmlsim.PostEvent(0, NvmlEventTypeXidCriticalError, 43); n != 1 {
		t.Fatalf("the event went to %d sets", n)
	}
	// The Watcher took the event from NVML and waits for a reader.
	eventually(t, "the Watcher to take the event", func() bool { return nvmlsim.Stat("queued") == 0 })
	cancel()
	waitDone(t, w, "its context's end with an event unread")
	if err := w.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err() = %v, want context.Canceled", err)
	}
	if n := nvmlsim.Stat("sets"); n != sets {
		t.Errorf("%d sets live, want %d", n, sets)
	}
	if n := initialized(); n != 1 {
		t.Errorf("Init count %d after the Watcher stopped, want the test's 1", n)
	}
	// The channel is closed; the unread event may or may not be on it.
	for range w.Events() {
	}
}

// A context that has ended already stops the Watcher before it waits.
func TestWatchWithAnEndedContextStopsAtOnce(t *testing.T) {
	initialize(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w, err := Watch(ctx, NvmlEventTypeClock, devices(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, w, "its start with an ended context")
	if err := w.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err() = %v, want context.Canceled", err)
	}
}

// Every failure of Watch's setup undoes what it did: the set is freed and
// the Init balanced.
func TestWatchThatFailsUndoesItsSetup(t *testing.T) {
	initialize(t)
	devs := devices(t)
	for _, c := range []struct {
		fail  string
		skip  int
		names string
	}{
		{"nvmlInit_v2", 0, "nvmlInit_v2"},
		{"nvmlEventSetCreate", 0, "nvmlEventSetCreate"},
		{"nvmlDeviceRegisterEvents", 0, "nvmlDeviceRegisterEvents"},
		{"nvmlDeviceRegisterEvents", 1, "nvmlDeviceRegisterEvents"}, // the second device
	} {
		t.Run(c.fail, func(t *testing.T) {
			sets, inits := nvmlsim.Stat("sets"), nvmlsim.Stat("init")
			if c.fail == "nvmlInit_v2" {
				// Watch's own Init is the first only when nothing else holds
				// one.
				if err := Shutdown(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if err := Init(); err != nil {
						t.Error(err)
					}
				})
				inits = 0
			}
			failAfter(t, c.fail, c.skip, 1, NVML_ERROR_UNKNOWN)
			w, err := Watch(context.Background(), NvmlEventTypeClock, devs...)
			if w != nil || !errors.Is(err, NVML_ERROR_UNKNOWN) || !strings.Contains(err.Error(), c.names) {
				t.Errorf("Watch = %v, %v; want NVML_ERROR_UNKNOWN naming %s", w, err, c.names)
			}
			if n := nvmlsim.Stat("sets"); n != sets {
				t.Errorf("%d sets live, want %d", n, sets)
			}
			if n := nvmlsim.Stat("init"); n != inits {
				t.Errorf("NVML's Init count %d, want %d", n, inits)
			}
		})
	}
}

// A wait that fails stops the Watcher with that error, named; the set is
// freed and the Init balanced.
func TestAWaitThatFailsStopsTheWatcher(t *testing.T) {
	initialize(t)
	sets := nvmlsim.Stat("sets")
	w, err := Watch(context.Background(), NvmlEventTypeClock, devices(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	failNext(t, "nvmlEventSetWait_v2", 1, NVML_ERROR_UNKNOWN)
	waitDone(t, w, "a failed wait")
	if err := w.Err(); !errors.Is(err, NVML_ERROR_UNKNOWN) || !strings.Contains(err.Error(), "nvmlEventSetWait_v2") {
		t.Errorf("Err() = %v, want NVML_ERROR_UNKNOWN naming nvmlEventSetWait_v2", err)
	}
	if _, ok := <-w.Events(); ok {
		t.Error("Events is open after Done")
	}
	if n := nvmlsim.Stat("sets"); n != sets {
		t.Errorf("%d sets live, want %d", n, sets)
	}
	if n := initialized(); n != 1 {
		t.Errorf("Init count %d, want the test's 1", n)
	}
}

// A Watcher that holds the last Init and whose Shutdown fails says so in
// Err, beside the context's end.
func TestAWatchersFailedShutdownIsInErr(t *testing.T) {
	if err := Init(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := DeviceByIndex(0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Watch(ctx, NvmlEventTypeClock, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := Shutdown(); err != nil {
		t.Fatal(err)
	}
	failNext(t, "nvmlShutdown", 1, NVML_ERROR_UNKNOWN)
	cancel()
	waitDone(t, w, "its context's end")
	err = w.Err()
	if !errors.Is(err, context.Canceled) || !errors.Is(err, NVML_ERROR_UNKNOWN) || !strings.Contains(err.Error(), "nvmlShutdown") {
		t.Errorf("Err() = %v, want context.Canceled and the failed nvmlShutdown", err)
	}
	// The failed Shutdown is still owed.
	if n := initialized(); n != 1 {
		t.Errorf("Init count %d after the failed Shutdown, want 1", n)
	}
	if err := Shutdown(); err != nil {
		t.Fatal(err)
	}
	if n := nvmlsim.Stat("init"); n != 0 {
		t.Errorf("NVML's count %d", n)
	}
}

// An Init that fails counts nothing: the next Init calls nvmlInit_v2
// again. A last Shutdown that fails keeps the count, so it can be made
// again.
func TestFailedInitAndShutdownCountNothing(t *testing.T) {
	inits := nvmlsim.Stat("inits")
	failNext(t, "nvmlInit_v2", 1, NVML_ERROR_UNKNOWN)
	if err := Init(); !errors.Is(err, NVML_ERROR_UNKNOWN) || !strings.Contains(err.Error(), "nvmlInit_v2") {
		t.Errorf("Init: %v", err)
	}
	if n := initialized(); n != 0 {
		t.Errorf("Init count %d after a failed Init", n)
	}
	if err := Init(); err != nil {
		t.Fatal(err)
	}
	if n := nvmlsim.Stat("inits") - inits; n != 1 {
		t.Errorf("%d successful nvmlInit_v2 calls, want 1", n)
	}
	failNext(t, "nvmlShutdown", 1, NVML_ERROR_UNKNOWN)
	if err := Shutdown(); !errors.Is(err, NVML_ERROR_UNKNOWN) || !strings.Contains(err.Error(), "nvmlShutdown") {
		t.Errorf("Shutdown: %v", err)
	}
	if n := initialized(); n != 1 {
		t.Errorf("Init count %d after a failed Shutdown, want 1", n)
	}
	if err := Shutdown(); err != nil {
		t.Fatal(err)
	}
	if n := initialized(); n != 0 {
		t.Errorf("Init count %d", n)
	}
}

// Memory falls back to nvmlDeviceGetMemoryInfo where the library lacks
// the _v2 call (no symbol, or NVML_ERROR_FUNCTION_NOT_FOUND), and only
// there: another error of _v2 is returned, named.
func TestMemoryFallsBackWhereTheVersionedCallIsMissing(t *testing.T) {
	initialize(t)
	if err := nvmlsim.SetProcesses(0, 2); err != nil {
		t.Fatal(err)
	}
	d := devices(t)[0]
	const mib = 1 << 20
	v1 := MemoryInfo{Total: 144 << 30, Used: 3*mib + 512*mib, Free: 144<<30 - 515*mib}
	t.Run("no symbol", func(t *testing.T) {
		saved := procDeviceGetMemoryInfo_v2
		t.Cleanup(func() { procDeviceGetMemoryInfo_v2 = saved })
		procDeviceGetMemoryInfo_v2 = proc{symbol: "nvmlDeviceGetMemoryInfo_v2_absent"}
		if m, err := d.Memory(); err != nil || m != v1 {
			t.Errorf("Memory() = %+v, %v; want nvmlDeviceGetMemoryInfo's %+v", m, err, v1)
		}
	})
	t.Run("function not found", func(t *testing.T) {
		failNext(t, "nvmlDeviceGetMemoryInfo_v2", 1, NVML_ERROR_FUNCTION_NOT_FOUND)
		if m, err := d.Memory(); err != nil || m != v1 {
			t.Errorf("Memory() = %+v, %v; want nvmlDeviceGetMemoryInfo's %+v", m, err, v1)
		}
	})
	t.Run("another error", func(t *testing.T) {
		failNext(t, "nvmlDeviceGetMemoryInfo_v2", 1, NVML_ERROR_UNKNOWN)
		if _, err := d.Memory(); !errors.Is(err, NVML_ERROR_UNKNOWN) || !strings.Contains(err.Error(), "nvmlDeviceGetMemoryInfo_v2") {
			t.Errorf("Memory() with _v2 failing: %v", err)
		}
	})
	t.Run("the fallback fails", func(t *testing.T) {
		failNext(t, "nvmlDeviceGetMemoryInfo_v2", 1, NVML_ERROR_FUNCTION_NOT_FOUND)
		failNext(t, "nvmlDeviceGetMemoryInfo", 1, NVML_ERROR_UNKNOWN)
		if _, err := d.Memory(); !errors.Is(err, NVML_ERROR_UNKNOWN) || !strings.Contains(err.Error(), "nvmlDeviceGetMemoryInfo:") {
			t.Errorf("Memory() with both failing: %v", err)
		}
	})
}

// Temperature falls back likewise, and only where TemperatureV is
// missing.
func TestTemperatureFallsBackOnlyWhereTemperatureVIsMissing(t *testing.T) {
	initialize(t)
	d := devices(t)[0]
	failNext(t, "nvmlDeviceGetTemperatureV", 1, NVML_ERROR_FUNCTION_NOT_FOUND)
	if c, err := d.Temperature(); err != nil || c != 31 {
		t.Errorf("Temperature() through the fallback: %d, %v", c, err)
	}
	failNext(t, "nvmlDeviceGetTemperatureV", 1, NVML_ERROR_UNKNOWN)
	if _, err := d.Temperature(); !errors.Is(err, NVML_ERROR_UNKNOWN) || !strings.Contains(err.Error(), "nvmlDeviceGetTemperatureV") {
		t.Errorf("Temperature() with TemperatureV failing: %v", err)
	}
	failNext(t, "nvmlDeviceGetTemperatureV", 1, NVML_ERROR_FUNCTION_NOT_FOUND)
	failNext(t, "nvmlDeviceGetTemperature", 1, NVML_ERROR_UNKNOWN)
	if _, err := d.Temperature(); !errors.Is(err, NVML_ERROR_UNKNOWN) || !strings.Contains(err.Error(), "nvmlDeviceGetTemperature:") {
		t.Errorf("Temperature() with both failing: %v", err)
	}
}

// Each Go-shaped call returns NVML's error, named by the C call, and no
// value.
func TestEveryCallNamesTheNVMLCallThatFailed(t *testing.T) {
	initialize(t)
	devs := devices(t)
	d, mig := devs[0], devs[1]
	for _, c := range []struct {
		fail string
		call func() error
	}{
		{"nvmlDeviceGetCount_v2", func() error { _, err := Devices(); return err }},
		{"nvmlDeviceGetHandleByIndex_v2", func() error { _, err := Devices(); return err }},
		{"nvmlDeviceGetHandleByPciBusId_v2", func() error { _, err := DeviceByPCIBusID("0000:19:00.0"); return err }},
		{"nvmlDeviceGetName", func() error { _, err := d.Name(); return err }},
		{"nvmlDeviceGetSerial", func() error { _, err := d.Serial(); return err }},
		{"nvmlDeviceGetPciInfo_v3", func() error { _, err := d.PCIBusID(); return err }},
		{"nvmlDeviceGetIndex", func() error { _, err := d.Index(); return err }},
		{"nvmlDeviceGetMinorNumber", func() error { _, err := d.MinorNumber(); return err }},
		{"nvmlDeviceGetUtilizationRates", func() error { _, err := d.Utilization(); return err }},
		{"nvmlDeviceGetTemperatureThreshold", func() error {
			_, err := d.TemperatureThreshold(NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)
			return err
		}},
		{"nvmlDeviceGetPowerUsage", func() error { _, err := d.PowerUsage(); return err }},
		{"nvmlDeviceGetEnforcedPowerLimit", func() error { _, err := d.PowerLimit(); return err }},
		{"nvmlDeviceGetTotalEnergyConsumption", func() error { _, err := d.Energy(); return err }},
		{"nvmlDeviceGetClockInfo", func() error { _, err := d.Clock(NVML_CLOCK_SM); return err }},
		{"nvmlDeviceGetMaxClockInfo", func() error { _, err := d.MaxClock(NVML_CLOCK_SM); return err }},
		{"nvmlDeviceGetPerformanceState", func() error {
			p, err := d.PerformanceState()
			if err == nil || p != NVML_PSTATE_UNKNOWN {
				return errors.New("no NVML_PSTATE_UNKNOWN with the error")
			}
			return err
		}},
		{"nvmlDeviceGetEccMode", func() error {
			c, p, err := d.ECCMode()
			if c || p {
				return errors.New("a mode with the error")
			}
			return err
		}},
		{"nvmlDeviceGetTotalEccErrors", func() error {
			_, err := d.ECCErrors(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC)
			return err
		}},
		{"nvmlDeviceGetComputeRunningProcesses_v3", func() error { _, err := d.ComputeProcesses(); return err }},
		{"nvmlDeviceGetGraphicsRunningProcesses_v3", func() error { _, err := d.GraphicsProcesses(); return err }},
		{"nvmlDeviceGetCurrentClocksEventReasons", func() error { _, err := d.ClocksEventReasons(); return err }},
		{"nvmlDeviceGetNvLinkState", func() error { _, err := d.NvLinks(); return err }},
		{"nvmlDeviceGetTopologyCommonAncestor", func() error { _, err := d.Topology(mig); return err }},
		{"nvmlDeviceGetSupportedEventTypes", func() error { _, err := d.SupportedEvents(); return err }},
		{"nvmlSystemGetDriverVersion", func() error { _, err := DriverVersion(); return err }},
		{"nvmlSystemGetNVMLVersion", func() error { _, err := Version(); return err }},
		{"nvmlSystemGetCudaDriverVersion", func() error { _, err := CUDADriverVersion(); return err }},
		{"nvmlDeviceGetMigMode", func() error {
			c, p, err := mig.MIGMode()
			if c || p {
				return errors.New("a mode with the error")
			}
			return err
		}},
		{"nvmlDeviceGetMaxMigDeviceCount", func() error { _, err := mig.MIGDevices(); return err }},
		{"nvmlDeviceGetMigDeviceHandleByIndex", func() error { _, err := mig.MIGDevices(); return err }},
		{"nvmlDeviceGetUUID", func() error { _, err := mig.MIGDevices(); return err }},
		{"nvmlDeviceGetGpuInstanceId", func() error { _, err := mig.MIGDevices(); return err }},
		{"nvmlDeviceGetComputeInstanceId", func() error { _, err := mig.MIGDevices(); return err }},
		{"nvmlDeviceIsMigDeviceHandle", func() error { _, err := d.IsMIG(); return err }},
		{"nvmlDeviceGetDeviceHandleFromMigDeviceHandle", func() error { _, err := d.Parent(); return err }},
	} {
		t.Run(c.fail, func(t *testing.T) {
			failNext(t, c.fail, 1, NVML_ERROR_UNKNOWN)
			if err := c.call(); !errors.Is(err, NVML_ERROR_UNKNOWN) || !strings.Contains(err.Error(), c.fail) {
				t.Errorf("got %v, want NVML_ERROR_UNKNOWN naming %s", err, c.fail)
			}
		})
	}
}

// NvLinks ends at the first link past link 0 that NVML says does not
// exist (INVALID_ARGUMENT or NOT_SUPPORTED); an error on link 0, or
// another error, is returned.
func TestNvLinksEndAtTheFirstMissingLink(t *testing.T) {
	initialize(t)
	d := devices(t)[0]
	for _, c := range []struct {
		name  string
		ret   Return
		after int // calls that pass first
		links int // -1: an error
	}{
		{"link 2 not supported", NVML_ERROR_NOT_SUPPORTED, 2, 2},
		{"link 1 invalid", NVML_ERROR_INVALID_ARGUMENT, 1, 1},
		{"link 1 unknown", NVML_ERROR_UNKNOWN, 1, -1},
		{"link 0 not supported", NVML_ERROR_NOT_SUPPORTED, 0, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			failAfter(t, "nvmlDeviceGetNvLinkState", c.after, 1, c.ret)
			links, err := d.NvLinks()
			switch {
			case c.links < 0 && !errors.Is(err, c.ret):
				t.Errorf("NvLinks() = %v, %v; want %v", links, err, c.ret)
			case c.links >= 0 && (err != nil || len(links) != c.links):
				t.Errorf("NvLinks() = %v, %v; want %d links", links, err, c.links)
			}
		})
	}
}

// A device index out of int range for NVML is refused before NVML is
// asked; 2^31 is asked (and refused by NVML).
func TestDeviceByIndexRange(t *testing.T) {
	initialize(t)
	for _, c := range []struct {
		index int
		nvml  bool // NVML's own error
	}{{-1, false}, {1<<31 + 1, false}, {1 << 31, true}} {
		_, err := DeviceByIndex(c.index)
		var r Return
		if err == nil || errors.As(err, &r) != c.nvml {
			t.Errorf("DeviceByIndex(%d) = %v; want an error from NVML: %v", c.index, err, c.nvml)
		}
	}
}

// cString takes a whole buffer without a NUL; cBytes ends its string
// with one.
func TestCStrings(t *testing.T) {
	if s := cString([]byte("abc")); s != "abc" {
		t.Errorf("cString without a NUL = %q", s)
	}
	if s := cString([]byte("ab\x00cd")); s != "ab" {
		t.Errorf("cString = %q", s)
	}
	b, err := cBytes("xy")
	if err != nil || string(b) != "xy\x00" {
		t.Errorf("cBytes = %q, %v", b, err)
	}
}

// The process list asks again with a larger buffer while NVML says it is
// too small, a few times, then gives up and says so.
func TestProcessesGiveUpOnAListThatKeepsGrowing(t *testing.T) {
	initialize(t)
	d := devices(t)[0]
	failNext(t, "nvmlDeviceGetComputeRunningProcesses_v3", 100, NVML_ERROR_INSUFFICIENT_SIZE)
	if _, err := d.ComputeProcesses(); err == nil || !strings.Contains(err.Error(), "kept growing") {
		t.Errorf("ComputeProcesses() = %v, want the list that kept growing", err)
	}
	failNext(t, "nvmlDeviceGetComputeRunningProcesses_v3", 7, NVML_ERROR_INSUFFICIENT_SIZE)
	if err := nvmlsim.SetProcesses(0, 3); err != nil {
		t.Fatal(err)
	}
	if ps, err := d.ComputeProcesses(); err != nil || len(ps) != 3 {
		t.Errorf("ComputeProcesses() after 7 refusals = %v, %v; want 3 processes", ps, err)
	}
}

// EventTypeString names the known bits in their order and writes the
// others in hexadecimal after them.
func TestEventTypeStringMixesKnownAndUnknownBits(t *testing.T) {
	if got, want := EventTypeString(NvmlEventTypeClock|NvmlEventTypeSingleBitEccError|1<<40), "SingleBitEccError|Clock|0x10000000000"; got != want {
		t.Errorf("EventTypeString = %q, want %q", got, want)
	}
	if got := EventTypeString(NvmlEventTypePState); got != "PState" {
		t.Errorf("EventTypeString(PState) = %q", got)
	}
}

// A list that does not change between the calls takes two: the second
// with a buffer large enough for what NVML reported.
func TestProcessesAskTwiceForAStableList(t *testing.T) {
	initialize(t)
	d := devices(t)[0]
	for _, n := range []int{17, 200} {
		if err := nvmlsim.SetProcesses(0, n); err != nil {
			t.Fatal(err)
		}
		failAfter(t, "nvmlDeviceGetComputeRunningProcesses_v3", 2, 1, NVML_ERROR_UNKNOWN) // a third call fails
		if ps, err := d.ComputeProcesses(); err != nil || len(ps) != n {
			t.Errorf("%d processes: %d listed, %v; want them after two calls", n, len(ps), err)
		}
		_ = nvmlsim.FailNext("nvmlDeviceGetComputeRunningProcesses_v3", 0, 0)
	}
}
