package hostmem

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The index agrees with a sorted slice under random inserts, removals and
// range queries of non-overlapping ranges.
func TestIndexAgreesWithASortedSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 14))
	var x index
	var model []*registration // by start
	const slots = 1024        // slot k is [k*16, k*16+8)
	used := make([]*registration, slots)
	for step := range 5000 {
		k := rng.IntN(slots)
		if r := used[k]; r != nil {
			x.remove(r)
			used[k] = nil
			i := slices.Index(model, r)
			model = slices.Delete(model, i, i+1)
		} else {
			r := &registration{start: uintptr(k * 16), end: uintptr(k*16 + 8)}
			x.insert(r)
			used[k] = r
			i, _ := slices.BinarySearchFunc(model, r.start, func(a *registration, s uintptr) int { return int(a.start) - int(s) })
			model = slices.Insert(model, i, r)
		}
		if x.n != len(model) {
			t.Fatalf("step %d: %d in the index, %d in the model", step, x.n, len(model))
		}
		start := uintptr(rng.IntN(slots * 16))
		end := start + uintptr(1+rng.IntN(256))
		got := x.overlapping(nil, start, end)
		var want []*registration
		for _, r := range model {
			if r.end > start && r.start < end {
				want = append(want, r)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: overlapping [%d, %d) = %d registrations, want %d", step, start, end, len(got), len(want))
		}
	}
	var all []*registration
	x.each(func(r *registration) { all = append(all, r) })
	if !slices.Equal(all, model) {
		t.Fatal("each does not list the registrations in address order")
	}
}
