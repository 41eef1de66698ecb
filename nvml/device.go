package nvml

import (
	"errors"
	"fmt"

	"github.com/purecuda/purecuda/internal/dl"
)

// missing reports whether err says the loaded library lacks the entry
// point: it is too old for it.
func missing(err error) bool {
	return errors.Is(err, ErrSymbol) || errors.Is(err, NVML_ERROR_FUNCTION_NOT_FOUND)
}

// Devices returns NVML's devices in its order (nvmlDeviceGetCount_v2,
// nvmlDeviceGetHandleByIndex_v2). NVML must be initialized (Init).
// NVML's order is by PCI bus id, which is CUDA's only with
// CUDA_DEVICE_ORDER=PCI_BUS_ID: match devices by UUID or bus id
// (DeviceByUUID, DeviceByPCIBusID), not by position.
func Devices() ([]Device, error) {
	var n uint32
	if err := DeviceGetCount(&n); err != nil {
		return nil, dl.Failed("nvml", "nvmlDeviceGetCount_v2", err)
	}
	devs := make([]Device, 0, n)
	for i := range n {
		d, err := DeviceByIndex(int(i))
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// DeviceByIndex returns NVML's device of that index
// (nvmlDeviceGetHandleByIndex_v2).
func DeviceByIndex(index int) (Device, error) {
	if index < 0 || uint64(index) > 1<<31 {
		return 0, fmt.Errorf("nvml: device index %d out of range", index)
	}
	var d Device
	if err := DeviceGetHandleByIndex(uint32(index), &d); err != nil {
		return 0, dl.Failed("nvml", "nvmlDeviceGetHandleByIndex_v2", err)
	}
	return d, nil
}

// DeviceByUUID returns the device (or MIG device) of that UUID, as
// nvidia-smi and package cuda's Device.UUID spell it: "GPU-" or "MIG-"
// and the hexadecimal groups (nvmlDeviceGetHandleByUUID).
func DeviceByUUID(uuid string) (Device, error) {
	b, err := cBytes(uuid)
	if err != nil {
		return 0, err
	}
	var d Device
	if err := DeviceGetHandleByUUID(&b[0], &d); err != nil {
		return 0, dl.Failed("nvml", "nvmlDeviceGetHandleByUUID", err)
	}
	return d, nil
}

// DeviceByPCIBusID returns the device at that PCI bus id, in the form
// domain:bus:device.function in hexadecimal ("0000:17:00.0", as package
// cuda's Device.PCIBusID gives it; nvmlDeviceGetHandleByPciBusId_v2).
func DeviceByPCIBusID(busID string) (Device, error) {
	b, err := cBytes(busID)
	if err != nil {
		return 0, err
	}
	var d Device
	if err := DeviceGetHandleByPciBusId(&b[0], &d); err != nil {
		return 0, dl.Failed("nvml", "nvmlDeviceGetHandleByPciBusId_v2", err)
	}
	return d, nil
}

// cBytes is s as a NUL-terminated C string; s may not be empty or hold a
// NUL.
func cBytes(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("nvml: empty string")
	}
	b := make([]byte, len(s)+1)
	for i := range len(s) {
		if s[i] == 0 {
			return nil, fmt.Errorf("nvml: %q holds a NUL byte", s)
		}
		b[i] = s[i]
	}
	return b, nil
}

// text calls an NVML function that writes a C string of at most size
// bytes into a buffer.
func text(call string, size int, f func(*byte, uint32) error) (string, error) {
	b := make([]byte, size)
	if err := f(&b[0], uint32(size)); err != nil {
		return "", dl.Failed("nvml", call, err)
	}
	return cString(b), nil
}

// Name is the device's product name (nvmlDeviceGetName).
func (d Device) Name() (string, error) {
	return text("nvmlDeviceGetName", NVML_DEVICE_NAME_V2_BUFFER_SIZE, func(p *byte, n uint32) error { return DeviceGetName(d, p, n) })
}

// UUID is the device's UUID as NVML and nvidia-smi spell it,
// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" ("MIG-..." for a MIG
// device; nvmlDeviceGetUUID).
func (d Device) UUID() (string, error) {
	return text("nvmlDeviceGetUUID", NVML_DEVICE_UUID_V2_BUFFER_SIZE, func(p *byte, n uint32) error { return DeviceGetUUID(d, p, n) })
}

// Serial is the board's serial number (nvmlDeviceGetSerial).
func (d Device) Serial() (string, error) {
	return text("nvmlDeviceGetSerial", NVML_DEVICE_SERIAL_BUFFER_SIZE, func(p *byte, n uint32) error { return DeviceGetSerial(d, p, n) })
}

// PCI is where a device sits on the PCI bus.
type PCI struct {
	BusID                 string // "00000000:17:00.0": domain:bus:device.function, domain in 8 digits
	Domain, Bus, Device   uint32
	DeviceID, SubsystemID uint32 // the PCI device and subsystem ids, vendor in the low 16 bits
}

// PCI is the device's PCI information (nvmlDeviceGetPciInfo_v3).
func (d Device) PCI() (PCI, error) {
	var p PciInfo
	if err := DeviceGetPciInfo(d, &p); err != nil {
		return PCI{}, dl.Failed("nvml", "nvmlDeviceGetPciInfo_v3", err)
	}
	return PCI{BusID: cString(p.BusId[:]), Domain: p.Domain, Bus: p.Bus, Device: p.Device,
		DeviceID: p.PciDeviceId, SubsystemID: p.PciSubSystemId}, nil
}

// PCIBusID is the device's PCI bus id as NVML spells it,
// "00000000:17:00.0" (8 digits of domain; CUDA writes 4, "0000:17:00.0":
// DeviceByPCIBusID takes either).
func (d Device) PCIBusID() (string, error) {
	p, err := d.PCI()
	return p.BusID, err
}

// Index is the device's index in NVML's order (nvmlDeviceGetIndex).
func (d Device) Index() (int, error) {
	var i uint32
	if err := DeviceGetIndex(d, &i); err != nil {
		return 0, dl.Failed("nvml", "nvmlDeviceGetIndex", err)
	}
	return int(i), nil
}

// MinorNumber is the N of the device's /dev/nvidiaN (Linux;
// nvmlDeviceGetMinorNumber).
func (d Device) MinorNumber() (int, error) {
	var n uint32
	if err := DeviceGetMinorNumber(d, &n); err != nil {
		return 0, dl.Failed("nvml", "nvmlDeviceGetMinorNumber", err)
	}
	return int(n), nil
}

// MemoryInfo is a device's memory in bytes.
type MemoryInfo struct {
	Total, Free, Used uint64
	// Reserved is what the driver and firmware hold, not counted in Used;
	// 0 where only nvmlDeviceGetMemoryInfo (v1) is available, whose Used
	// includes it.
	Reserved uint64
}

// Memory is the device's memory: nvmlDeviceGetMemoryInfo_v2 (Used
// without what the system reserves, as nvidia-smi reports it) where the
// library has it, else nvmlDeviceGetMemoryInfo.
func (d Device) Memory() (MemoryInfo, error) {
	m := Memory_v2{Version: NvmlMemory_v2}
	err := DeviceGetMemoryInfo_v2(d, &m)
	if err == nil {
		return MemoryInfo{Total: m.Total, Free: m.Free, Used: m.Used, Reserved: m.Reserved}, nil
	}
	if !missing(err) {
		return MemoryInfo{}, dl.Failed("nvml", "nvmlDeviceGetMemoryInfo_v2", err)
	}
	var m1 Memory
	if err := DeviceGetMemoryInfo(d, &m1); err != nil {
		return MemoryInfo{}, dl.Failed("nvml", "nvmlDeviceGetMemoryInfo", err)
	}
	return MemoryInfo{Total: m1.Total, Free: m1.Free, Used: m1.Used}, nil
}

// UtilizationRates are the percentages of the last sample period during
// which a kernel ran (GPU) and device memory was read or written (Memory).
type UtilizationRates struct {
	GPU, Memory uint32
}

// Utilization is the device's utilization (nvmlDeviceGetUtilizationRates).
func (d Device) Utilization() (UtilizationRates, error) {
	var u Utilization
	if err := DeviceGetUtilizationRates(d, &u); err != nil {
		return UtilizationRates{}, dl.Failed("nvml", "nvmlDeviceGetUtilizationRates", err)
	}
	return UtilizationRates{GPU: u.Gpu, Memory: u.Memory}, nil
}

// Temperature is the GPU die's temperature in °C:
// nvmlDeviceGetTemperatureV, or nvmlDeviceGetTemperature (deprecated in
// CUDA 13.0) where the library lacks it.
func (d Device) Temperature() (int, error) {
	t := Temperature{Version: NvmlTemperature_v1, SensorType: NVML_TEMPERATURE_GPU}
	err := DeviceGetTemperatureV(d, &t)
	if err == nil {
		return int(t.Temperature), nil
	}
	if !missing(err) {
		return 0, dl.Failed("nvml", "nvmlDeviceGetTemperatureV", err)
	}
	var c uint32
	if err := DeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &c); err != nil {
		return 0, dl.Failed("nvml", "nvmlDeviceGetTemperature", err)
	}
	return int(c), nil
}

// TemperatureThreshold is the temperature in °C at which the device does
// what kind says (slows down, shuts down, ...;
// nvmlDeviceGetTemperatureThreshold).
func (d Device) TemperatureThreshold(kind TemperatureThresholds) (int, error) {
	var c uint32
	if err := DeviceGetTemperatureThreshold(d, kind, &c); err != nil {
		return 0, dl.Failed("nvml", "nvmlDeviceGetTemperatureThreshold", err)
	}
	return int(c), nil
}

// uintCall calls an NVML function that writes one unsigned int.
func uintCall(call string, f func(*uint32) error) (uint32, error) {
	var v uint32
	if err := f(&v); err != nil {
		return 0, dl.Failed("nvml", call, err)
	}
	return v, nil
}

// PowerUsage is the board's power draw in milliwatts (nvmlDeviceGetPowerUsage).
func (d Device) PowerUsage() (uint32, error) {
	return uintCall("nvmlDeviceGetPowerUsage", func(v *uint32) error { return DeviceGetPowerUsage(d, v) })
}

// PowerLimit is the power limit the device enforces, in milliwatts
// (nvmlDeviceGetEnforcedPowerLimit).
func (d Device) PowerLimit() (uint32, error) {
	return uintCall("nvmlDeviceGetEnforcedPowerLimit", func(v *uint32) error { return DeviceGetEnforcedPowerLimit(d, v) })
}

// Energy is the energy the device has used since the driver was loaded,
// in millijoules (nvmlDeviceGetTotalEnergyConsumption).
func (d Device) Energy() (uint64, error) {
	var e uint64
	if err := DeviceGetTotalEnergyConsumption(d, &e); err != nil {
		return 0, dl.Failed("nvml", "nvmlDeviceGetTotalEnergyConsumption", err)
	}
	return e, nil
}

// Clock is the current clock of that kind in MHz (nvmlDeviceGetClockInfo).
func (d Device) Clock(kind ClockType) (uint32, error) {
	return uintCall("nvmlDeviceGetClockInfo", func(v *uint32) error { return DeviceGetClockInfo(d, kind, v) })
}

// MaxClock is the highest clock of that kind in MHz (nvmlDeviceGetMaxClockInfo).
func (d Device) MaxClock(kind ClockType) (uint32, error) {
	return uintCall("nvmlDeviceGetMaxClockInfo", func(v *uint32) error { return DeviceGetMaxClockInfo(d, kind, v) })
}

// FanSpeed is the fan's intended speed in percent of its maximum
// (nvmlDeviceGetFanSpeed); NVML_ERROR_NOT_SUPPORTED for passively cooled
// boards.
func (d Device) FanSpeed() (uint32, error) {
	return uintCall("nvmlDeviceGetFanSpeed", func(v *uint32) error { return DeviceGetFanSpeed(d, v) })
}

// PerformanceState is the device's performance state, NVML_PSTATE_0
// (highest) to NVML_PSTATE_15 (nvmlDeviceGetPerformanceState).
func (d Device) PerformanceState() (Pstates, error) {
	var p Pstates
	if err := DeviceGetPerformanceState(d, &p); err != nil {
		return NVML_PSTATE_UNKNOWN, dl.Failed("nvml", "nvmlDeviceGetPerformanceState", err)
	}
	return p, nil
}

// ECCMode says whether ECC is on now and after the next reboot
// (nvmlDeviceGetEccMode).
func (d Device) ECCMode() (current, pending bool, err error) {
	var c, p EnableState
	if err := DeviceGetEccMode(d, &c, &p); err != nil {
		return false, false, dl.Failed("nvml", "nvmlDeviceGetEccMode", err)
	}
	return c == NVML_FEATURE_ENABLED, p == NVML_FEATURE_ENABLED, nil
}

// ECCErrors is the count of memory errors of that type (corrected or
// not), since the driver loaded (NVML_VOLATILE_ECC) or for the board's
// life (NVML_AGGREGATE_ECC; nvmlDeviceGetTotalEccErrors).
func (d Device) ECCErrors(kind MemoryErrorType, counter EccCounterType) (uint64, error) {
	var n uint64
	if err := DeviceGetTotalEccErrors(d, kind, counter, &n); err != nil {
		return 0, dl.Failed("nvml", "nvmlDeviceGetTotalEccErrors", err)
	}
	return n, nil
}

// Process is a process that uses a device.
//
// # Process ids
//
// PID is the process id as NVML sees it: the host's, in the process id
// namespace of the driver (the initial one), not that of the caller. In a
// container with its own process id namespace (Docker, Kubernetes pods
// without hostPID) the ids differ from the container's own, os.Getpid
// included, so that a program there does not find itself in the list by
// its pid; the processes of other containers on the same GPU are listed
// too, by their host ids. Inside such a container the host ids are not
// visible (its /proc shows its own); a program that must find itself runs
// with the host's namespace (docker --pid=host, hostPID: true).
type Process struct {
	// PID is the host's process id (see # Process ids).
	PID uint32
	// UsedMemory is the device memory it holds in bytes; NotAvailable
	// where the driver does not say (Windows' WDDM mode, no permission).
	UsedMemory uint64
	// GPUInstanceID and ComputeInstanceID are its MIG instances;
	// NotAvailable32 without MIG.
	GPUInstanceID, ComputeInstanceID uint32
}

// NotAvailable and NotAvailable32 are NVML's "value not available"
// (NVML_VALUE_NOT_AVAILABLE, -1 in C) in the fields that use it.
const (
	NotAvailable   = ^uint64(0)
	NotAvailable32 = ^uint32(0)
)

// ComputeProcesses lists the processes with a compute context on the
// device (nvmlDeviceGetComputeRunningProcesses_v3), by their host process
// ids (see Process: not a container's).
func (d Device) ComputeProcesses() ([]Process, error) {
	return processes("nvmlDeviceGetComputeRunningProcesses_v3", func(n *uint32, p *ProcessInfo) error {
		return DeviceGetComputeRunningProcesses(d, n, p)
	})
}

// GraphicsProcesses lists the processes with a graphics context on the
// device (nvmlDeviceGetGraphicsRunningProcesses_v3), by their host process
// ids (see Process).
func (d Device) GraphicsProcesses() ([]Process, error) {
	return processes("nvmlDeviceGetGraphicsRunningProcesses_v3", func(n *uint32, p *ProcessInfo) error {
		return DeviceGetGraphicsRunningProcesses(d, n, p)
	})
}

// processes asks with a buffer that grows while NVML says it is too small
// (processes come and go between the calls).
func processes(call string, f func(*uint32, *ProcessInfo) error) ([]Process, error) {
	buf := make([]ProcessInfo, 16)
	for range 8 {
		n := uint32(len(buf))
		err := f(&n, &buf[0])
		if errors.Is(err, NVML_ERROR_INSUFFICIENT_SIZE) {
			buf = make([]ProcessInfo, max(int(n)+8, 2*len(buf)))
			continue
		}
		if err != nil {
			return nil, dl.Failed("nvml", call, err)
		}
		if int(n) > len(buf) {
			return nil, fmt.Errorf("nvml: %s: reported %d processes for a buffer of %d", call, n, len(buf))
		}
		ps := make([]Process, n)
		for i, p := range buf[:n] {
			ps[i] = Process{PID: p.Pid, UsedMemory: p.UsedGpuMemory, GPUInstanceID: p.GpuInstanceId, ComputeInstanceID: p.ComputeInstanceId}
		}
		return ps, nil
	}
	return nil, fmt.Errorf("nvml: %s: the process list kept growing", call)
}

// ClocksEventReasons is the bit set of reasons the clocks are below their
// maximum now, the NvmlClocksEventReason* constants
// (nvmlDeviceGetCurrentClocksEventReasons; the throttle-reasons call it
// replaces is deprecated in CUDA 13.0).
func (d Device) ClocksEventReasons() (uint64, error) {
	var r uint64
	if err := DeviceGetCurrentClocksEventReasons(d, &r); err != nil {
		return 0, dl.Failed("nvml", "nvmlDeviceGetCurrentClocksEventReasons", err)
	}
	return r, nil
}

// NvLink is the state of one NVLink link of a device.
type NvLink struct {
	Link   int
	Active bool
}

// NvLinks is the state of each of the device's NVLink links
// (nvmlDeviceGetNvLinkState for links 0 to NVML_NVLINK_MAX_LINKS-1,
// ending at the first link NVML says does not exist). A device without
// NVLink gives NVML_ERROR_NOT_SUPPORTED.
func (d Device) NvLinks() ([]NvLink, error) {
	var links []NvLink
	for i := range NVML_NVLINK_MAX_LINKS {
		var s EnableState
		err := DeviceGetNvLinkState(d, uint32(i), &s)
		if i > 0 && (errors.Is(err, NVML_ERROR_INVALID_ARGUMENT) || errors.Is(err, NVML_ERROR_NOT_SUPPORTED)) {
			break
		}
		if err != nil {
			return nil, dl.Failed("nvml", "nvmlDeviceGetNvLinkState", err)
		}
		links = append(links, NvLink{Link: i, Active: s == NVML_FEATURE_ENABLED})
	}
	return links, nil
}

// Topology is the closest common ancestor of the device and other on the
// PCI and CPU topology, NVML_TOPOLOGY_INTERNAL (the same board) to
// NVML_TOPOLOGY_SYSTEM (across CPU sockets;
// nvmlDeviceGetTopologyCommonAncestor).
func (d Device) Topology(other Device) (GpuTopologyLevel, error) {
	var l GpuTopologyLevel
	if err := DeviceGetTopologyCommonAncestor(d, other, &l); err != nil {
		return 0, dl.Failed("nvml", "nvmlDeviceGetTopologyCommonAncestor", err)
	}
	return l, nil
}

// DriverVersion is the NVIDIA driver's version, e.g. "580.82.07"
// (nvmlSystemGetDriverVersion).
func DriverVersion() (string, error) {
	return text("nvmlSystemGetDriverVersion", NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE, SystemGetDriverVersion)
}

// Version is NVML's version, e.g. "13.580.82.07" (nvmlSystemGetNVMLVersion).
func Version() (string, error) {
	return text("nvmlSystemGetNVMLVersion", NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE, SystemGetNVMLVersion)
}

// CUDADriverVersion is the CUDA version the driver supports, as
// cuDriverGetVersion gives it (13000 for 13.0; nvmlSystemGetCudaDriverVersion).
func CUDADriverVersion() (int, error) {
	var v int32
	if err := SystemGetCudaDriverVersion(&v); err != nil {
		return 0, dl.Failed("nvml", "nvmlSystemGetCudaDriverVersion", err)
	}
	return int(v), nil
}

// cString is the text of a NUL-terminated C string in b (all of b if it
// holds no NUL).
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
