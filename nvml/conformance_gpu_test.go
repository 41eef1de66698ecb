//go:build gpu

package nvml

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// smiQuery is what the conformance test asks nvidia-smi, and compares.
const smiQuery = "name,uuid,pci.bus_id,memory.total,memory.used,temperature.gpu,power.draw,clocks.sm"

// smiRow is one device's line of nvidia-smi's answer.
type smiRow struct {
	name, uuid, busID                      string
	memTotal, memUsed, temp, power, clocks float64 // MiB, MiB, °C, W, MHz
}

// nvidiaSMI runs nvidia-smi --query-gpu=smiQuery and parses its lines.
func nvidiaSMI(t *testing.T) (map[string]smiRow, string) {
	t.Helper()
	out, err := exec.Command("nvidia-smi", "--query-gpu="+smiQuery, "--format=csv,noheader,nounits").Output()
	if err != nil {
		t.Fatalf("nvidia-smi: %v", err)
	}
	r := csv.NewReader(strings.NewReader(string(out)))
	r.TrimLeadingSpace = true
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatalf("nvidia-smi's output %q: %v", out, err)
	}
	rows := map[string]smiRow{}
	for _, rec := range recs {
		if len(rec) != 8 {
			t.Fatalf("nvidia-smi line %q: %d fields", rec, len(rec))
		}
		num := func(s string) float64 {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return math.NaN() // "[N/A]"
			}
			return v
		}
		row := smiRow{name: rec[0], uuid: rec[1], busID: rec[2], memTotal: num(rec[3]), memUsed: num(rec[4]),
			temp: num(rec[5]), power: num(rec[6]), clocks: num(rec[7])}
		rows[row.uuid] = row
	}
	return rows, strings.TrimSpace(string(out))
}

// within reports whether v lies between a and b, widened by slack.
func within(v, a, b, slack float64) bool {
	return v >= math.Min(a, b)-slack && v <= math.Max(a, b)+slack
}

// TestConformsToNvidiaSmi reads each device's name, UUID, bus id, memory,
// temperature, power and SM clock through the package between two runs
// of nvidia-smi and compares: the strings and the total memory exactly,
// the rest within what changed between the two runs (plus a small slack:
// 1 °C, 5 W and 5%, one 15 MHz clock step, 64 MiB). It prints both.
func TestConformsToNvidiaSmi(t *testing.T) {
	if err := Init(); err != nil {
		t.Fatal(err)
	}
	defer Shutdown()
	before, beforeText := nvidiaSMI(t)
	devs, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	type reading struct {
		name, uuid, busID string
		mem               MemoryInfo
		temp              int
		power             uint32
		clock             uint32
	}
	var got []reading
	for _, d := range devs {
		var r reading
		var errs []error
		var e error
		r.name, e = d.Name()
		errs = append(errs, e)
		r.uuid, e = d.UUID()
		errs = append(errs, e)
		r.busID, e = d.PCIBusID()
		errs = append(errs, e)
		r.mem, e = d.Memory()
		errs = append(errs, e)
		r.temp, e = d.Temperature()
		errs = append(errs, e)
		r.power, e = d.PowerUsage()
		errs = append(errs, e)
		r.clock, e = d.Clock(NVML_CLOCK_SM)
		errs = append(errs, e)
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("device %s: %v", r.uuid, err)
		}
		got = append(got, r)
	}
	after, afterText := nvidiaSMI(t)
	t.Logf("nvml-vs-smi: nvidia-smi --query-gpu=%s (before):\n%s", smiQuery, beforeText)
	t.Logf("nvml-vs-smi: nvidia-smi (after):\n%s", afterText)
	if len(before) != len(got) {
		t.Errorf("nvidia-smi lists %d devices, NVML %d", len(before), len(got))
	}
	const mib = 1 << 20
	for _, r := range got {
		t.Logf("nvml-vs-smi: nvml: %s, %s, %s, %d, %d, %d, %.2f, %d", r.name, r.uuid, r.busID,
			r.mem.Total/mib, r.mem.Used/mib, r.temp, float64(r.power)/1000, r.clock)
		b, ok1 := before[r.uuid]
		a, ok2 := after[r.uuid]
		if !ok1 || !ok2 {
			t.Errorf("%s: not in nvidia-smi's list", r.uuid)
			continue
		}
		if r.name != b.name || r.busID != b.busID {
			t.Errorf("%s: name %q, bus id %q; nvidia-smi: %q, %q", r.uuid, r.name, r.busID, b.name, b.busID)
		}
		if float64(r.mem.Total/mib) != b.memTotal {
			t.Errorf("%s: memory.total %d MiB, nvidia-smi %v MiB", r.uuid, r.mem.Total/mib, b.memTotal)
		}
		if !within(float64(r.mem.Used/mib), b.memUsed, a.memUsed, 64) {
			t.Errorf("%s: memory.used %d MiB, nvidia-smi %v then %v", r.uuid, r.mem.Used/mib, b.memUsed, a.memUsed)
		}
		if !within(float64(r.temp), b.temp, a.temp, 1) {
			t.Errorf("%s: temperature %d °C, nvidia-smi %v then %v", r.uuid, r.temp, b.temp, a.temp)
		}
		if w := float64(r.power) / 1000; !within(w, b.power, a.power, 5+0.05*math.Max(b.power, a.power)) {
			t.Errorf("%s: power.draw %.2f W, nvidia-smi %v then %v", r.uuid, w, b.power, a.power)
		}
		if !within(float64(r.clock), b.clocks, a.clocks, 15) {
			t.Errorf("%s: clocks.sm %d MHz, nvidia-smi %v then %v", r.uuid, r.clock, b.clocks, a.clocks)
		}
	}
}

// TestEveryCallAnswersOrSaysNotSupported calls each Go-shaped method on
// every device: each must succeed or fail with NVML's own error (a field
// the device does not report, a permission), never crash.
func TestEveryCallAnswersOrSaysNotSupported(t *testing.T) {
	if err := Init(); err != nil {
		t.Fatal(err)
	}
	defer Shutdown()
	devs, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range devs {
		calls := map[string]func() (any, error){
			"Serial":      func() (any, error) { return d.Serial() },
			"PCI":         func() (any, error) { return d.PCI() },
			"Index":       func() (any, error) { return d.Index() },
			"MinorNumber": func() (any, error) { return d.MinorNumber() },
			"Utilization": func() (any, error) { return d.Utilization() },
			"Threshold":   func() (any, error) { return d.TemperatureThreshold(NVML_TEMPERATURE_THRESHOLD_SLOWDOWN) },
			"PowerLimit":  func() (any, error) { return d.PowerLimit() },
			"Energy":      func() (any, error) { return d.Energy() },
			"MaxClock":    func() (any, error) { return d.MaxClock(NVML_CLOCK_SM) },
			"FanSpeed":    func() (any, error) { return d.FanSpeed() },
			"Pstate":      func() (any, error) { return d.PerformanceState() },
			"ECCMode": func() (any, error) {
				c, p, err := d.ECCMode()
				return fmt.Sprint(c, p), err
			},
			"ECCErrors": func() (any, error) { return d.ECCErrors(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC) },
			"Compute":   func() (any, error) { return d.ComputeProcesses() },
			"Graphics":  func() (any, error) { return d.GraphicsProcesses() },
			"MIGMode": func() (any, error) {
				c, p, err := d.MIGMode()
				return fmt.Sprint(c, p), err
			},
			"MIGDevices": func() (any, error) { return d.MIGDevices() },
			"NvLinks":    func() (any, error) { return d.NvLinks() },
			"Topology":   func() (any, error) { return d.Topology(d) },
			"Reasons":    func() (any, error) { return d.ClocksEventReasons() },
			"Events":     func() (any, error) { return d.SupportedEvents() },
		}
		for name, f := range calls {
			v, err := f()
			switch {
			case err == nil:
				t.Logf("device %d: %s = %v", i, name, v)
			case errors.Is(err, NVML_ERROR_NOT_SUPPORTED), errors.Is(err, NVML_ERROR_NO_PERMISSION):
				t.Logf("device %d: %s: %v", i, name, err)
			default:
				t.Errorf("device %d: %s: %v", i, name, err)
			}
		}
	}
	for name, f := range map[string]func() (any, error){
		"DriverVersion":     func() (any, error) { return DriverVersion() },
		"Version":           func() (any, error) { return Version() },
		"CUDADriverVersion": func() (any, error) { return CUDADriverVersion() },
	} {
		v, err := f()
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		t.Logf("%s = %v", name, v)
	}
}

// TestWatchOnTheGPUStopsWithItsContext registers the device's supported
// event types and stops the Watcher: it must free its set and end within
// a bound.
func TestWatchOnTheGPUStopsWithItsContext(t *testing.T) {
	if err := Init(); err != nil {
		t.Fatal(err)
	}
	defer Shutdown()
	d, err := DeviceByIndex(0)
	if err != nil {
		t.Fatal(err)
	}
	types, err := d.SupportedEvents()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("supported events: %s", EventTypeString(types))
	ctx, cancel := context.WithTimeout(context.Background(), 3*WaitPeriod*time.Millisecond)
	defer cancel()
	w, err := Watch(ctx, types, d)
	if err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev, ok := <-w.Events():
			if ok {
				t.Logf("event: %+v (%s)", ev, EventTypeString(ev.Type))
				continue
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the Watcher did not stop within 20 s of its context's end")
		}
		break
	}
	select {
	case <-w.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the Watcher's Events closed, but Done did not within 20 s")
	}
	if err := w.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Err() = %v, want the context's deadline", err)
	}
	if initialized() != 1 {
		t.Errorf("Init count %d after the Watcher stopped, want the test's 1", initialized())
	}
}
