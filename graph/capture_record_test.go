package graph

import (
	"testing"

	"github.com/purecuda/purecuda/libcuda"
)

// Cached reuses one capture record for each of its captures. A lease
// finds the record of the capture in progress on its stream; once that
// capture has ended the record takes no lease, and the next capture with
// the same record takes only its own. A lease by id (from a stream that
// joined the capture) finds the capture whose id the driver gives; an id
// of no capture in progress finds none.
// The leases of one capture go with it.
func TestCaptureRecordTakesTheLeasesOfItsCaptureOnly(t *testing.T) {
	const s = libcuda.Stream(0x5eed) // no driver call is made with it
	const active = libcuda.CU_STREAM_CAPTURE_STATUS_ACTIVE
	var released [4]int
	fn := func(i int) leaseFn { return leaseFn{f: func() { released[i]++ }} }
	var c capture
	if leaseOn(s, fn(0)) {
		t.Fatal("a record never begun took a lease")
	}
	c.begin(s, 0)
	if !leaseOn(s, fn(0)) {
		t.Fatal("the capture in progress refused its own lease")
	}
	first := c.end()
	if leaseOn(s, fn(1)) {
		t.Fatal("an ended capture took a lease")
	}
	c.begin(s, 7) // its id known: leaseByID asks the driver for none
	if leaseByID(1<<62, active, 0x5eef, fn(1)) {
		t.Fatal("a lease by an id of no capture in progress was taken")
	}
	if !leaseByID(7, active, 0x5eef, fn(2)) || !leaseOn(s, fn(3)) {
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
