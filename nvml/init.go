package nvml

import (
	"fmt"
	"sync"

	"github.com/purecuda/purecuda/internal/dl"
)

// The package's own count of Init calls not yet balanced by Shutdown.
// NVML counts its nvmlInit calls too; the package calls nvmlInit_v2 once
// for the first Init and nvmlShutdown once for the last Shutdown, so that
// a library whose count is also used by C code in the process stays
// balanced.
var (
	initMu    sync.Mutex
	initCount int
)

// Init loads NVML (see Load) and initializes it (nvmlInit_v2) on the first
// call; every later call only counts. Each successful Init must be
// balanced by a Shutdown. The Go-shaped functions (Devices, the methods
// of Device, Watch) need NVML initialized; without it they return
// NVML_ERROR_UNINITIALIZED.
func Init() error {
	initMu.Lock()
	defer initMu.Unlock()
	if initCount > 0 {
		initCount++
		return nil
	}
	if err := RawInit(); err != nil {
		return dl.Failed("nvml", "nvmlInit_v2", err)
	}
	initCount = 1
	return nil
}

// Shutdown balances one Init. The last one shuts NVML down
// (nvmlShutdown). A Shutdown without an Init to balance is an error
// (NVML_ERROR_UNINITIALIZED), and calls nothing.
func Shutdown() error {
	initMu.Lock()
	defer initMu.Unlock()
	switch initCount {
	case 0:
		return fmt.Errorf("nvml: Shutdown without Init: %w", NVML_ERROR_UNINITIALIZED)
	case 1:
		if err := RawShutdown(); err != nil {
			return dl.Failed("nvml", "nvmlShutdown", err)
		}
	}
	initCount--
	return nil
}

// initialized reports how many Init calls are not yet balanced.
func initialized() int {
	initMu.Lock()
	defer initMu.Unlock()
	return initCount
}
