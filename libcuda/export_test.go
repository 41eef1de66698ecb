package libcuda

import "sync/atomic"

// Hooks for the tests of package libcuda_test, which run in the same
// binary as those of package libcuda.

// ForgetProc makes the entry point of that base name unresolved again, as
// it was before its first call; it reports whether there is one.
func ForgetProc(name string) bool {
	found := false
	resolveMu.Lock()
	for _, p := range procs {
		if p.name == name {
			atomic.StoreUintptr(&p.addr, 0)
			p.missing = nil
			found = true
		}
	}
	resolveMu.Unlock()
	return found
}

// ForgetDescriptions drops the cached answers of cuGetErrorString.
func ForgetDescriptions() { descriptions.Clear() }
