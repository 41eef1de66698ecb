// Command nvmlwatch prints one line per NVIDIA GPU as NVML sees it (index, name,
// UUID, PCI bus id, memory used of total, temperature, power draw, SM
// clock, performance state, MIG mode, compute processes) and, with
// -watch, the events NVML reports (Xid errors, ECC errors, clock and
// performance state changes) as they arrive, until interrupted.
//
//	go run ./examples/nvmlwatch [-watch]
//
// It needs no cgo and no CUDA toolkit: package nvml opens the driver's
// libnvidia-ml.so.1 (nvml.dll) at run time; PURECUDA_LIBNVML points at
// another. A value a device does not report is printed as "-". It exits
// 1 when NVML cannot be loaded or initialized.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/purecuda/purecuda/nvml"
)

func main() {
	watch := flag.Bool("watch", false, "after the summary, print events as they arrive until interrupted")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *watch); err != nil {
		fmt.Fprintln(os.Stderr, "nvmlwatch:", err)
		os.Exit(1)
	}
}

// run prints the summary to w and, with watch, the events until ctx ends.
func run(ctx context.Context, w io.Writer, watch bool) error {
	if err := nvml.Init(); err != nil {
		return err
	}
	defer nvml.Shutdown()
	devs, err := nvml.Devices()
	if err != nil {
		return err
	}
	driver, err := nvml.DriverVersion()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "driver %s, %d devices\n", driver, len(devs))
	for i, d := range devs {
		fmt.Fprintln(w, summary(i, d))
	}
	if !watch || len(devs) == 0 {
		return nil
	}
	return events(ctx, w, devs)
}

// summary is a device's line; a field the device does not report is "-".
func summary(i int, d nvml.Device) string {
	f := []string{fmt.Sprint(i)}
	add := func(format string, v any, err error) {
		if err != nil {
			f = append(f, "-")
			return
		}
		f = append(f, fmt.Sprintf(format, v))
	}
	name, err := d.Name()
	add("%s", name, err)
	uuid, err := d.UUID()
	add("%s", uuid, err)
	bus, err := d.PCIBusID()
	add("%s", bus, err)
	m, err := d.Memory()
	add("%s", fmt.Sprintf("%d/%d MiB", m.Used>>20, m.Total>>20), err)
	c, err := d.Temperature()
	add("%d°C", c, err)
	p, err := d.PowerUsage()
	add("%.1fW", float64(p)/1000, err)
	sm, err := d.Clock(nvml.NVML_CLOCK_SM)
	add("SM %dMHz", sm, err)
	ps, err := d.PerformanceState()
	add("P%d", int(ps), err)
	mig, _, err := d.MIGMode()
	add("MIG %s", map[bool]string{false: "off", true: "on"}[mig], err)
	procs, err := d.ComputeProcesses()
	add("%d processes", len(procs), err)
	return strings.Join(f, "  ")
}

// events prints the events of every device until ctx ends: the types all
// the devices support.
func events(ctx context.Context, w io.Writer, devs []nvml.Device) error {
	types := ^uint64(0)
	index := map[nvml.Device]int{}
	for i, d := range devs {
		s, err := d.SupportedEvents()
		if err != nil {
			return err
		}
		types &= s
		index[d] = i
	}
	if types == 0 {
		return errors.New("the devices support no event type in common")
	}
	watcher, err := nvml.Watch(ctx, types, devs...)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "watching %s (Ctrl-C ends)\n", nvml.EventTypeString(types))
	for ev := range watcher.Events() {
		fmt.Fprintf(w, "%s  device %d  %s  data %d\n", time.Now().Format("15:04:05.000"), index[ev.Device], nvml.EventTypeString(ev.Type), ev.Data)
	}
	if err := watcher.Err(); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
