package tests

import (
	"fmt"
	"os"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/nvml"
)

// busNumbers parses a PCI bus id, "dddd:bb:dd.f" (CUDA) or
// "dddddddd:bb:dd.f" (NVML), into its numbers.
func busNumbers(t *testing.T, id string) [4]uint {
	t.Helper()
	var n [4]uint
	if _, err := fmt.Sscanf(id, "%x:%x:%x.%x", &n[0], &n[1], &n[2], &n[3]); err != nil {
		t.Fatalf("bus id %q: %v", id, err)
	}
	return n
}

// TestCUDAAndNVMLAgreeOnEveryDevice matches each CUDA device with NVML's
// by its UUID and by its PCI bus id, the two strings the packages share:
// both must name the same NVML device, whose own UUID and bus id are the
// CUDA device's. On the simulator that is the driver simulator against
// the NVML simulator; on a GPU host, the driver against its NVML.
func TestCUDAAndNVMLAgreeOnEveryDevice(t *testing.T) {
	nvmlSetup(t)
	if err := nvml.Init(); err != nil {
		t.Fatal(err)
	}
	defer nvml.Shutdown()
	devs, err := cuda.Devices()
	if err != nil {
		t.Fatal(err)
	}
	nvdevs, err := nvml.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("CUDA_VISIBLE_DEVICES") == "" && len(nvdevs) != len(devs) {
		t.Errorf("CUDA sees %d devices, NVML %d", len(devs), len(nvdevs))
	}
	for _, d := range devs {
		u, err := d.UUID()
		if err != nil {
			t.Fatal(err)
		}
		bus, err := d.PCIBusID()
		if err != nil {
			t.Fatal(err)
		}
		byUUID, err := nvml.DeviceByUUID(u.String())
		if err != nil {
			t.Errorf("CUDA device %d (%s): %v", d.Ordinal(), u, err)
			continue
		}
		byBus, err := nvml.DeviceByPCIBusID(bus)
		if err != nil {
			t.Errorf("CUDA device %d (%s): %v", d.Ordinal(), bus, err)
			continue
		}
		if byUUID != byBus {
			t.Errorf("CUDA device %d: its UUID %s and its bus id %s name two NVML devices", d.Ordinal(), u, bus)
		}
		nu, err := byUUID.UUID()
		if err != nil {
			t.Fatal(err)
		}
		nbus, err := byUUID.PCIBusID()
		if err != nil {
			t.Fatal(err)
		}
		if nu != u.String() || busNumbers(t, nbus) != busNumbers(t, bus) {
			t.Errorf("CUDA device %d is %s at %s; NVML says %s at %s", d.Ordinal(), u, bus, nu, nbus)
		}
		t.Logf("CUDA device %d: %s at %s; NVML: %s at %s", d.Ordinal(), u, bus, nu, nbus)
	}
}
