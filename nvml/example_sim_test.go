//go:build !gpu

package nvml_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/purecuda/purecuda/internal/testenv/nvmlsim"
	"github.com/purecuda/purecuda/nvml"
)

// Devices lists the GPUs; a field a device does not report is
// NVML_ERROR_NOT_SUPPORTED. (On the NVML simulator.)
func ExampleDevices() {
	if err := nvml.Init(); err != nil {
		fmt.Println(err)
		return
	}
	defer nvml.Shutdown()
	devs, err := nvml.Devices()
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, d := range devs {
		name, _ := d.Name()
		uuid, _ := d.UUID()
		mem, _ := d.Memory()
		temp, _ := d.Temperature()
		fmt.Printf("%d %s %s %d MiB %d°C\n", i, name, uuid, mem.Total>>20, temp)
		if _, err := d.FanSpeed(); errors.Is(err, nvml.NVML_ERROR_NOT_SUPPORTED) {
			fmt.Println("  no fan to report")
		}
	}
	// Output:
	// 0 NVIDIA H200 (simulated) GPU-5e1a7ed0-4820-4c0d-9a3b-112233445500 147456 MiB 31°C
	//   no fan to report
	// 1 NVIDIA H200 (simulated) GPU-5e1a7ed0-4820-4c0d-9a3b-112233445501 147456 MiB 32°C
	//   no fan to report
}

// Watch delivers NVML's events on a channel until its context ends. (On
// the NVML simulator, whose nvmlsim.PostEvent stands for the GPU.)
func ExampleWatch() {
	if err := nvml.Init(); err != nil {
		fmt.Println(err)
		return
	}
	defer nvml.Shutdown()
	d, err := nvml.DeviceByIndex(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := nvml.Watch(ctx, nvml.NvmlEventTypeXidCriticalError, d)
	if err != nil {
		fmt.Println(err)
		return
	}
	nvmlsim.PostEvent(0, nvml.NvmlEventTypeXidCriticalError, 79) // as a GPU fallen off the bus would
	ev := <-w.Events()
	fmt.Println(nvml.EventTypeString(ev.Type), ev.Data, ev.Device == d)
	cancel() // the Watcher frees its event set and stops
	<-w.Done()
	fmt.Println(w.Err())
	// Output:
	// XidCriticalError 79 true
	// context canceled
}
