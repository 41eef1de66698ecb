package graph

import (
	"testing"

	"github.com/purecuda/purecuda/libcuda"
)

// Cached reuses one capture record for each of its captures, and Lease
// finds a record before it locks it: a lease that looked up the record
// during one capture may reach it after that capture has ended, or while
// the next one is in progress. The record refuses it then, unless the
// driver said the capture was invalidated (an invalidated capture may not
// tell its id; its graph never runs, so a later capture keeping the
// function longer is harmless). The leases of one capture go with it.
func TestCaptureRecordRefusesLeasesOfAnotherCapture(t *testing.T) {
	const active, invalidated = libcuda.CU_STREAM_CAPTURE_STATUS_ACTIVE, libcuda.CU_STREAM_CAPTURE_STATUS_INVALIDATED
	var released [4]int
	fn := func(i int) leaseFn { return leaseFn{f: func() { released[i]++ }} }
	var c capture
	if c.lease(0, active, fn(0)) {
		t.Fatal("a record never begun took a lease")
	}
	c.begin(1)
	if !c.lease(1, active, fn(0)) {
		t.Fatal("the capture in progress refused its own lease")
	}
	first := c.end()
	if c.lease(1, active, fn(1)) {
		t.Fatal("an ended capture took a lease")
	}
	c.begin(2)
	if c.lease(1, active, fn(1)) {
		t.Fatal("the next capture took a lease of the one before")
	}
	if !c.lease(2, active, fn(2)) || !c.lease(0, invalidated, fn(3)) {
		t.Fatal("the capture in progress refused a lease of its own")
	}
	second := c.end()
	if c.end() != nil {
		t.Fatal("a second end returned leases")
	}
	if first == second || !first.held() || !second.held() {
		t.Fatalf("the two captures' leases: %p and %p, want two that hold something", first, second)
	}
	first.unrefHere()
	if released != [4]int{1, 0, 0, 0} {
		t.Fatalf("after the first capture's leases went: released %v, want [1 0 0 0]", released)
	}
	second.unrefHere()
	if released != [4]int{1, 0, 1, 1} {
		t.Fatalf("after the second capture's leases went: released %v, want [1 0 1 1]", released)
	}
}
