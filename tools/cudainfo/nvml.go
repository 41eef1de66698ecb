package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/nvml"
)

// nvmlReady is set once NVML is initialized; nvmlErr says why it is not.
var (
	nvmlReady bool
	nvmlErr   error
)

// startNVML initializes NVML for the NVML lines of each device. A machine
// without NVML still gets the driver's view.
func startNVML() {
	if nvmlErr = nvml.Init(); nvmlErr != nil {
		fmt.Printf("nvml     not available: %v\n", strings.SplitN(nvmlErr.Error(), "\n", 2)[0])
		return
	}
	nvmlReady = true
	lib, _ := nvml.Loaded()
	v, _ := nvml.Version()
	d, _ := nvml.DriverVersion()
	fmt.Printf("nvml     %s, NVML %s, driver %s\n", lib.Path, v, d)
}

// stopNVML balances startNVML.
func stopNVML() {
	if nvmlReady {
		_ = nvml.Shutdown()
	}
}

// uuidString writes a CUuuid as NVML and nvidia-smi do.
func uuidString(u libcuda.Uuid) string {
	var b strings.Builder
	b.WriteString("GPU-")
	for i, c := range u.Bytes {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b.WriteByte('-')
		}
		fmt.Fprintf(&b, "%02x", uint8(c))
	}
	return b.String()
}

// nvmlView prints what NVML tells of the CUDA device dev, found by its
// UUID: memory used, temperature, power, clocks, MIG mode, processes. A
// value the device does not report is printed as such.
func nvmlView(dev libcuda.Device) {
	if !nvmlReady {
		return
	}
	var u libcuda.Uuid
	if err := libcuda.DeviceGetUuid(&u, dev); err != nil {
		fmt.Printf("  nvml: cuDeviceGetUuid: %v\n", err)
		return
	}
	d, err := nvml.DeviceByUUID(uuidString(u))
	if err != nil {
		fmt.Printf("  nvml: %v\n", err)
		return
	}
	show := func(err error) string {
		if errors.Is(err, nvml.NVML_ERROR_NOT_SUPPORTED) {
			return "not supported"
		}
		return err.Error()
	}
	uuid, _ := d.UUID()
	bus, _ := d.PCIBusID()
	fmt.Printf("  nvml: %s at %s\n", uuid, bus)
	if m, err := d.Memory(); err == nil {
		fmt.Printf("  nvml: memory %d MiB used, %d MiB free, %d MiB reserved of %d MiB\n", m.Used>>20, m.Free>>20, m.Reserved>>20, m.Total>>20)
	} else {
		fmt.Printf("  nvml: memory %s\n", show(err))
	}
	line := func(what string, v any, err error) {
		if err != nil {
			fmt.Printf("  nvml: %-12s %s\n", what, show(err))
			return
		}
		fmt.Printf("  nvml: %-12s %v\n", what, v)
	}
	c, err := d.Temperature()
	line("temperature", fmt.Sprintf("%d °C", c), err)
	p, err := d.PowerUsage()
	limit, lerr := d.PowerLimit()
	line("power", fmt.Sprintf("%.1f W of %.1f W", float64(p)/1000, float64(limit)/1000), errors.Join(err, lerr))
	sm, err := d.Clock(nvml.NVML_CLOCK_SM)
	smMax, merr := d.MaxClock(nvml.NVML_CLOCK_SM)
	line("SM clock", fmt.Sprintf("%d MHz of %d MHz", sm, smMax), errors.Join(err, merr))
	mem, err := d.Clock(nvml.NVML_CLOCK_MEM)
	line("memory clock", fmt.Sprintf("%d MHz", mem), err)
	cur, _, err := d.MIGMode()
	line("MIG mode", cur, err)
	ps, err := d.ComputeProcesses()
	if err == nil {
		var s []string
		for _, pr := range ps {
			if pr.UsedMemory == nvml.NotAvailable {
				s = append(s, fmt.Sprintf("%d", pr.PID))
				continue
			}
			s = append(s, fmt.Sprintf("%d (%d MiB)", pr.PID, pr.UsedMemory>>20))
		}
		line("processes", fmt.Sprintf("%d %s", len(ps), strings.Join(s, ", ")), nil)
	} else {
		line("processes", nil, err)
	}
}
