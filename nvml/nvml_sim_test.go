//go:build !gpu

package nvml

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv/nvmlsim"
)

// timeout bounds every wait: a test that waits longer has failed.
const timeout = 20 * time.Second

// initialize calls Init for the test and Shutdown when it ends.
func initialize(t *testing.T) {
	t.Helper()
	if err := Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
}

func devices(t *testing.T) []Device {
	t.Helper()
	devs, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != nvmlsim.Devices {
		t.Fatalf("%d devices, want the simulator's %d", len(devs), nvmlsim.Devices)
	}
	return devs
}

func TestLoadTakesTheSimulatorFromTheEnvironment(t *testing.T) {
	if err := Load(); err != nil {
		t.Fatal(err)
	}
	lib, ok := Loaded()
	path, _ := nvmlsim.Setup()
	if !ok || lib.Path != path {
		t.Errorf("Loaded() = %+v, %v; want the simulator %s", lib, ok, path)
	}
}

func TestInitAndShutdownAreCountedAndCallNVMLOnceEach(t *testing.T) {
	inits, shutdowns := nvmlsim.Stat("inits"), nvmlsim.Stat("shutdowns")
	for range 3 {
		if err := Init(); err != nil {
			t.Fatal(err)
		}
	}
	if got := nvmlsim.Stat("inits") - inits; got != 1 {
		t.Errorf("three Inits made %d nvmlInit_v2 calls, want 1", got)
	}
	for i := range 3 {
		if err := Shutdown(); err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		if i == 2 {
			want = 1
		}
		if got := nvmlsim.Stat("shutdowns") - shutdowns; got != want {
			t.Errorf("after %d Shutdowns: %d nvmlShutdown calls, want %d", i+1, got, want)
		}
	}
	if n := nvmlsim.Stat("init"); n != 0 {
		t.Errorf("NVML's count is %d after balanced calls", n)
	}
	if err := Shutdown(); !errors.Is(err, NVML_ERROR_UNINITIALIZED) {
		t.Errorf("an unbalanced Shutdown: %v, want NVML_ERROR_UNINITIALIZED", err)
	}
	if got := nvmlsim.Stat("shutdowns") - shutdowns; got != 1 {
		t.Errorf("the unbalanced Shutdown called nvmlShutdown (%d calls)", got)
	}
}

func TestCallsBeforeInitAreUninitialized(t *testing.T) {
	if initialized() != 0 {
		t.Fatal("NVML is initialized at the test's start")
	}
	_, err := Devices()
	if !errors.Is(err, NVML_ERROR_UNINITIALIZED) {
		t.Fatalf("Devices without Init: %v, want NVML_ERROR_UNINITIALIZED", err)
	}
	if !strings.Contains(err.Error(), "nvmlDeviceGetCount_v2") || !strings.Contains(err.Error(), "Uninitialized") {
		t.Errorf("the error %q names neither the call nor NVML's text", err)
	}
}

func TestDevicesTellWhatTheSimulatorHolds(t *testing.T) {
	initialize(t)
	for i, d := range devices(t) {
		name, err := d.Name()
		if err != nil || name != "NVIDIA H200 (simulated)" {
			t.Errorf("device %d: Name() = %q, %v", i, name, err)
		}
		uuid, err := d.UUID()
		if want := "GPU-5e1a7ed0-4820-4c0d-9a3b-11223344550" + string(rune('0'+i)); err != nil || uuid != want {
			t.Errorf("device %d: UUID() = %q, %v; want %s", i, uuid, err, want)
		}
		if s, err := d.Serial(); err != nil || len(s) != 13 {
			t.Errorf("device %d: Serial() = %q, %v", i, s, err)
		}
		pci, err := d.PCI()
		if err != nil || pci.Bus != uint32(0x19+0x10*i) || pci.BusID != []string{"00000000:19:00.0", "00000000:29:00.0"}[i] || pci.DeviceID != 0x233510DE {
			t.Errorf("device %d: PCI() = %+v, %v", i, pci, err)
		}
		if idx, err := d.Index(); err != nil || idx != i {
			t.Errorf("device %d: Index() = %d, %v", i, idx, err)
		}
		if m, err := d.MinorNumber(); err != nil || m != i {
			t.Errorf("device %d: MinorNumber() = %d, %v", i, m, err)
		}
		if c, err := d.Temperature(); err != nil || c != 31+i {
			t.Errorf("device %d: Temperature() = %d, %v", i, c, err)
		}
		if c, err := d.TemperatureThreshold(NVML_TEMPERATURE_THRESHOLD_SLOWDOWN); err != nil || c != 92 {
			t.Errorf("device %d: slowdown threshold %d, %v", i, c, err)
		}
		if p, err := d.PowerUsage(); err != nil || p != 75000+1000*uint32(i) {
			t.Errorf("device %d: PowerUsage() = %d, %v", i, p, err)
		}
		if p, err := d.PowerLimit(); err != nil || p != 700000 {
			t.Errorf("device %d: PowerLimit() = %d, %v", i, p, err)
		}
		e1, err1 := d.Energy()
		e2, err2 := d.Energy()
		if err1 != nil || err2 != nil || e2 <= e1 {
			t.Errorf("device %d: Energy() = %d then %d (%v, %v): the counter must grow", i, e1, e2, err1, err2)
		}
		if c, err := d.Clock(NVML_CLOCK_SM); err != nil || c != 345 {
			t.Errorf("device %d: SM clock %d, %v", i, c, err)
		}
		if c, err := d.MaxClock(NVML_CLOCK_MEM); err != nil || c != 3201 {
			t.Errorf("device %d: max memory clock %d, %v", i, c, err)
		}
		if p, err := d.PerformanceState(); err != nil || p != NVML_PSTATE_0 {
			t.Errorf("device %d: PerformanceState() = %v, %v", i, p, err)
		}
		if cur, pend, err := d.ECCMode(); err != nil || !cur || !pend {
			t.Errorf("device %d: ECCMode() = %v, %v, %v", i, cur, pend, err)
		}
		if n, err := d.ECCErrors(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC); err != nil || n != 1 {
			t.Errorf("device %d: corrected ECC errors %d, %v", i, n, err)
		}
		if u, err := d.Utilization(); err != nil || u != (UtilizationRates{}) {
			t.Errorf("device %d: Utilization() = %+v, %v", i, u, err)
		}
		if r, err := d.ClocksEventReasons(); err != nil || r != NvmlClocksEventReasonGpuIdle {
			t.Errorf("device %d: ClocksEventReasons() = %#x, %v", i, r, err)
		}
	}
}

func TestMemoryUsesTheVersionedCall(t *testing.T) {
	initialize(t)
	if err := nvmlsim.SetProcesses(0, 2); err != nil {
		t.Fatal(err)
	}
	m, err := devices(t)[0].Memory()
	if err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	want := MemoryInfo{Total: 144 << 30, Reserved: 512 * mib, Used: 3 * mib, Free: 144<<30 - 515*mib}
	if m != want {
		t.Errorf("Memory() = %+v, want %+v (nvmlDeviceGetMemoryInfo_v2's answer)", m, want)
	}
	// The raw call without the version field is refused, as by NVML.
	var raw Memory_v2
	if err := DeviceGetMemoryInfo_v2(devices(t)[0], &raw); !errors.Is(err, NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
		t.Errorf("nvmlDeviceGetMemoryInfo_v2 without a version: %v", err)
	}
}

func TestAnUnsupportedFieldIsNotSupported(t *testing.T) {
	initialize(t)
	d := devices(t)[0]
	_, err := d.FanSpeed()
	if !errors.Is(err, NVML_ERROR_NOT_SUPPORTED) {
		t.Errorf("FanSpeed() on a passively cooled device: %v, want NVML_ERROR_NOT_SUPPORTED", err)
	}
	var r Return
	if !errors.As(err, &r) || r != NVML_ERROR_NOT_SUPPORTED {
		t.Errorf("errors.As gives %v", r)
	}
	if _, _, err := d.MIGMode(); err != nil {
		t.Errorf("MIGMode() of a GPU without MIG mode on: %v", err)
	}
	if _, err := d.MIGDevices(); !errors.Is(err, NVML_ERROR_NOT_SUPPORTED) {
		t.Errorf("MIGDevices() of a GPU without MIG mode: %v, want NVML_ERROR_NOT_SUPPORTED", err)
	}
}

func TestTemperatureFallsBackWhereTheLibraryLacksTemperatureV(t *testing.T) {
	initialize(t)
	d := devices(t)[1]
	saved := procDeviceGetTemperatureV
	t.Cleanup(func() { procDeviceGetTemperatureV = saved })
	// As a library without the entry point: resolving it fails.
	procDeviceGetTemperatureV = proc{symbol: "nvmlDeviceGetTemperatureV_absent"}
	if err := DeviceGetTemperatureV(d, &Temperature{}); !errors.Is(err, ErrSymbol) {
		t.Fatalf("the missing entry point: %v, want a SymbolError", err)
	}
	c, err := d.Temperature()
	if err != nil || c != 32 {
		t.Errorf("Temperature() through nvmlDeviceGetTemperature: %d, %v; want 32", c, err)
	}
}

func TestProcessesGrowTheBufferUntilTheyFit(t *testing.T) {
	initialize(t)
	d := devices(t)[0]
	for _, n := range []int{0, 2, 16, 17, 200} {
		if err := nvmlsim.SetProcesses(0, n); err != nil {
			t.Fatal(err)
		}
		ps, err := d.ComputeProcesses()
		if err != nil {
			t.Fatalf("%d processes: %v", n, err)
		}
		if len(ps) != n {
			t.Fatalf("%d processes listed, want %d", len(ps), n)
		}
		for k, p := range ps {
			if p.PID != uint32(1000+k) || p.UsedMemory != uint64(k+1)<<20 || p.GPUInstanceID != NotAvailable32 {
				t.Errorf("process %d: %+v", k, p)
			}
		}
	}
	if err := nvmlsim.SetProcesses(0, 2); err != nil {
		t.Fatal(err)
	}
	if ps, err := d.GraphicsProcesses(); err != nil || len(ps) != 0 {
		t.Errorf("GraphicsProcesses() = %v, %v", ps, err)
	}
}

func TestMIGDevicesHaveTheirUUIDsAndInstances(t *testing.T) {
	initialize(t)
	gpu := devices(t)[1]
	cur, pend, err := gpu.MIGMode()
	if err != nil || !cur || !pend {
		t.Fatalf("MIGMode() = %v, %v, %v", cur, pend, err)
	}
	migs, err := gpu.MIGDevices()
	if err != nil {
		t.Fatal(err)
	}
	if len(migs) != 2 {
		t.Fatalf("%d MIG devices, want 2", len(migs))
	}
	for k, m := range migs {
		if m.GPUInstanceID != k+1 || m.ComputeInstanceID != 0 || !strings.HasPrefix(m.UUID, "MIG-") {
			t.Errorf("MIG device %d: %+v", k, m)
		}
		if is, err := m.Device.IsMIG(); err != nil || !is {
			t.Errorf("MIG device %d: IsMIG() = %v, %v", k, is, err)
		}
		if p, err := m.Device.Parent(); err != nil || p != gpu {
			t.Errorf("MIG device %d: Parent() = %v, %v", k, p, err)
		}
		if d, err := DeviceByUUID(m.UUID); err != nil || d != m.Device {
			t.Errorf("DeviceByUUID(%s) = %v, %v", m.UUID, d, err)
		}
	}
}

func TestNvLinksAndTopology(t *testing.T) {
	initialize(t)
	devs := devices(t)
	links, err := devs[0].NvLinks()
	if err != nil {
		t.Fatal(err)
	}
	want := []NvLink{{0, true}, {1, true}, {2, false}, {3, false}}
	if len(links) != len(want) {
		t.Fatalf("NvLinks() = %v, want %v", links, want)
	}
	for i := range want {
		if links[i] != want[i] {
			t.Errorf("link %d: %+v, want %+v", i, links[i], want[i])
		}
	}
	if l, err := devs[0].Topology(devs[1]); err != nil || l != NVML_TOPOLOGY_NODE {
		t.Errorf("Topology(0, 1) = %v, %v; want NVML_TOPOLOGY_NODE", l, err)
	}
	if l, err := devs[1].Topology(devs[1]); err != nil || l != NVML_TOPOLOGY_INTERNAL {
		t.Errorf("Topology(1, 1) = %v, %v; want NVML_TOPOLOGY_INTERNAL", l, err)
	}
}

func TestDevicesAreFoundByUUIDAndBusID(t *testing.T) {
	initialize(t)
	for i, d := range devices(t) {
		uuid, err := d.UUID()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := DeviceByUUID(uuid); err != nil || got != d {
			t.Errorf("device %d: DeviceByUUID(%s) = %v, %v", i, uuid, got, err)
		}
		bus, err := d.PCIBusID()
		if err != nil {
			t.Fatal(err)
		}
		short := bus[4:] // CUDA's spelling: four digits of domain
		for _, id := range []string{bus, short, strings.ToLower(short)} {
			if got, err := DeviceByPCIBusID(id); err != nil || got != d {
				t.Errorf("device %d: DeviceByPCIBusID(%s) = %v, %v", i, id, got, err)
			}
		}
	}
	for _, bad := range []string{"", "GPU-\x00"} {
		if _, err := DeviceByUUID(bad); err == nil {
			t.Errorf("DeviceByUUID(%q) did not fail", bad)
		}
	}
	if _, err := DeviceByUUID("GPU-00000000-0000-0000-0000-000000000000"); !errors.Is(err, NVML_ERROR_NOT_FOUND) {
		t.Errorf("an unknown UUID: %v, want NVML_ERROR_NOT_FOUND", err)
	}
	if _, err := DeviceByIndex(-1); err == nil {
		t.Error("DeviceByIndex(-1) did not fail")
	}
	if _, err := DeviceByIndex(nvmlsim.Devices); !errors.Is(err, NVML_ERROR_INVALID_ARGUMENT) {
		t.Errorf("DeviceByIndex past the end: %v", err)
	}
}

func TestSystemVersions(t *testing.T) {
	initialize(t)
	if v, err := DriverVersion(); err != nil || v != "580.0.sim" {
		t.Errorf("DriverVersion() = %q, %v", v, err)
	}
	if v, err := Version(); err != nil || v != "13.580.0.sim" {
		t.Errorf("Version() = %q, %v", v, err)
	}
	if v, err := CUDADriverVersion(); err != nil || v != 13000 {
		t.Errorf("CUDADriverVersion() = %d, %v", v, err)
	}
}

func TestWatchDeliversEventsAndStopsWithItsContext(t *testing.T) {
	initialize(t)
	devs := devices(t)
	sets := nvmlsim.Stat("sets")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := Watch(ctx, NvmlEventTypeXidCriticalError|NvmlEventTypeClock, devs...)
	if err != nil {
		t.Fatal(err)
	}
	if got := nvmlsim.Stat("sets") - sets; got != 1 {
		t.Fatalf("%d event sets made, want 1", got)
	}
	if n := nvmlsim.PostEvent(1, NvmlEventTypeXidCriticalError, 79); n != 1 {
		t.Fatalf("the event went to %d sets", n)
	}
	if n := nvmlsim.PostEvent(0, NvmlEventTypePState, 0); n != 0 {
		t.Fatalf("an event type not registered went to %d sets", n)
	}
	if n := nvmlsim.PostEvent(0, NvmlEventTypeClock, 0); n != 1 {
		t.Fatalf("the clock event went to %d sets", n)
	}
	for _, want := range []Event{
		{Device: devs[1], Type: NvmlEventTypeXidCriticalError, Data: 79, GPUInstanceID: NotAvailable32, ComputeInstanceID: NotAvailable32},
		{Device: devs[0], Type: NvmlEventTypeClock, GPUInstanceID: NotAvailable32, ComputeInstanceID: NotAvailable32},
	} {
		select {
		case ev, ok := <-w.Events():
			if !ok || ev != want {
				t.Errorf("event %+v (open %v), want %+v", ev, ok, want)
			}
		case <-time.After(timeout):
			t.Fatalf("no event within %v", timeout)
		}
	}
	if err := w.Err(); err != nil {
		t.Errorf("Err() of a running Watcher: %v", err)
	}
	cancel()
	select {
	case <-w.Done():
	case <-time.After(timeout):
		t.Fatalf("the Watcher did not stop within %v of its context's end", timeout)
	}
	select {
	case _, ok := <-w.Events():
		if ok {
			t.Error("Events is open after Done")
		}
	case <-time.After(timeout):
		t.Fatal("Events is open after Done: a receive blocked")
	}
	if err := w.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err() = %v, want context.Canceled", err)
	}
	if got := nvmlsim.Stat("sets"); got != sets {
		t.Errorf("%d event sets live after the Watcher stopped, want %d", got, sets)
	}
	if initialized() != 1 {
		t.Errorf("the Watcher left the Init count at %d, want the test's 1", initialized())
	}
}

func TestWatchOutlivesTheCallersShutdown(t *testing.T) {
	if err := Init(); err != nil {
		t.Fatal(err)
	}
	d, err := DeviceByIndex(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := Watch(ctx, NvmlEventTypeXidCriticalError, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := Shutdown(); err != nil {
		t.Fatal(err)
	}
	if n := nvmlsim.Stat("init"); n != 1 {
		t.Fatalf("NVML's count is %d while the Watcher runs, want 1", n)
	}
	nvmlsim.PostEvent(0, NvmlEventTypeXidCriticalError, 13)
	select {
	case ev := <-w.Events():
		if ev.Data != 13 {
			t.Errorf("event %+v", ev)
		}
	case <-time.After(timeout):
		t.Fatal("no event")
	}
	cancel()
	select {
	case <-w.Done():
	case <-time.After(timeout):
		t.Fatal("the Watcher did not stop")
	}
	if n := nvmlsim.Stat("init"); n != 0 {
		t.Errorf("NVML's count is %d after the Watcher stopped, want 0", n)
	}
}

func TestWatchRefusesBadArguments(t *testing.T) {
	initialize(t)
	d := devices(t)[0]
	sets := nvmlsim.Stat("sets")
	//lint:ignore SA1012 a nil context is what the test passes
	if _, err := Watch(nil, NvmlEventTypeClock, d); err == nil {
		t.Error("a nil context was taken")
	}
	if _, err := Watch(context.Background(), 0, d); err == nil {
		t.Error("no event types was taken")
	}
	if _, err := Watch(context.Background(), NvmlEventTypeClock); err == nil {
		t.Error("no devices was taken")
	}
	if _, err := Watch(context.Background(), NvmlEventTypeGpuUnavailableError, d); !errors.Is(err, NVML_ERROR_NOT_SUPPORTED) {
		t.Errorf("an unsupported event type: %v, want NVML_ERROR_NOT_SUPPORTED", err)
	}
	if got := nvmlsim.Stat("sets"); got != sets {
		t.Errorf("the failed Watch left %d sets, want %d", got, sets)
	}
	if initialized() != 1 {
		t.Errorf("the failed Watch left the Init count at %d", initialized())
	}
	if s, err := d.SupportedEvents(); err != nil || s&NvmlEventTypeXidCriticalError == 0 {
		t.Errorf("SupportedEvents() = %#x, %v", s, err)
	}
}

func TestEventTypeString(t *testing.T) {
	for types, want := range map[uint64]string{
		0: "None",
		NvmlEventTypeXidCriticalError | NvmlEventTypeClock: "XidCriticalError|Clock",
		1 << 40: "0x10000000000",
	} {
		if got := EventTypeString(types); got != want {
			t.Errorf("EventTypeString(%#x) = %q, want %q", types, got, want)
		}
	}
}

func TestCallsDoNotAllocate(t *testing.T) {
	initialize(t)
	d := devices(t)[0]
	var c uint32
	if n := testing.AllocsPerRun(100, func() { _ = DeviceGetClockInfo(d, NVML_CLOCK_SM, &c) }); n != 0 {
		t.Errorf("nvmlDeviceGetClockInfo: %v allocations a call", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = DeviceGetFanSpeed(d, &c) }); n != 0 {
		t.Errorf("a call that fails: %v allocations a call", n)
	}
	runtime.KeepAlive(c)
}
