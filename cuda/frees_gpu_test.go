//go:build gpu

package cuda_test

import "testing"

// liveAllocations: the driver does not count them; 0.
func liveAllocations(testing.TB) int64 { return 0 }

// waitAllocations: no test on the GPU counts allocations; nothing to wait
// for.
func waitAllocations(testing.TB, int64) {}
