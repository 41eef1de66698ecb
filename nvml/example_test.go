package nvml_test

import (
	"errors"
	"fmt"

	"github.com/purecuda/purecuda/nvml"
)

// A CUDA device and NVML's meet by UUID or PCI bus id: the strings that
// cuda.Device.UUID().String() and PCIBusID() give.
func ExampleDeviceByUUID() {
	if err := nvml.Init(); err != nil {
		fmt.Println(err)
		return
	}
	defer nvml.Shutdown()
	d, err := nvml.DeviceByUUID("GPU-00000000-0000-0000-0000-000000000000")
	fmt.Println(d == 0, errors.Is(err, nvml.NVML_ERROR_NOT_FOUND))
	// Output:
	// true true
}
