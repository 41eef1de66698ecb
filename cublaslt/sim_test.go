//go:build !gpu

package cublaslt_test

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
)

func heuristics(t testing.TB) int64 { return testenv.BLASStat(t, "heuristics") }

// Close destroys the handle in the stand-in.
func TestCloseDestroysTheHandle(t *testing.T) {
	f := newFixture(t)
	raw := uintptr(f.lt.Raw())
	if !testenv.BLASLive(t, raw) {
		t.Fatal("the handle is not live")
	}
	testenv.MustBounded(t, "f.lt.Close", f.lt.Close)
	testenv.Eventually(t, "the destroy", func() bool { return !testenv.BLASLive(t, raw) })
}
