package hostmem

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// rsModel is the obvious sorted slice that rangeSet must agree with.
type rsModel []rsItem

type rsItem struct {
	start, end uintptr
	v          int
}

func (it *rsItem) bounds() (uintptr, uintptr) { return it.start, it.end }

// rsSet is the rangeSet of the tests.
type rsSet = rangeSet[*rsItem]

func newRSItem(start, end uintptr, v int) *rsItem { return &rsItem{start, end, v} }

func rsVals(items []*rsItem) []int {
	var vs []int
	for _, it := range items {
		vs = append(vs, it.v)
	}
	return vs
}

// v returns the value of a lookup's answer, -1 for none.
func rsV(it *rsItem, ok bool) int {
	if !ok {
		return -1
	}
	return it.v
}

func (m rsModel) overlapping(start, end uintptr) []int {
	var vs []int
	for _, it := range m {
		if start < end && it.start < end && start < it.end {
			vs = append(vs, it.v)
		}
	}
	return vs
}

// check verifies the tree's order, heap and count, and that its values
// are want.
func rsCheck(t *testing.T, s *rsSet, want []int) {
	t.Helper()
	var got []int
	var walk func(n *rangeNode[*rsItem], lo, hi uintptr) int
	walk = func(n *rangeNode[*rsItem], lo, hi uintptr) int {
		if n == nil {
			return 0
		}
		if n.start() < lo || n.end() > hi || n.end() <= n.start() {
			t.Fatalf("range [%#x, %#x) out of order (bounds [%#x, %#x))", n.start(), n.end(), lo, hi)
		}
		for _, c := range []*rangeNode[*rsItem]{n.left, n.right} {
			if c != nil && rsHigher(c, n) {
				t.Fatalf("a child of [%#x, %#x) has a higher priority", n.start(), n.end())
			}
		}
		k := walk(n.left, lo, n.start())
		got = append(got, n.v.v)
		return k + 1 + walk(n.right, n.end(), hi)
	}
	if k := walk(s.root, 0, ^uintptr(0)); k != s.Len() {
		t.Fatalf("Len() = %d; the tree holds %d", s.Len(), k)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ranges %v; want %v", got, want)
	}
	var all []int
	for it := range s.All() {
		all = append(all, it.v)
	}
	if !slices.Equal(all, want) {
		t.Fatalf("All yields %v; want %v", all, want)
	}
}

func rsValues(m rsModel) []int {
	vs := make([]int, len(m))
	for i, it := range m {
		vs[i] = it.v
	}
	return vs
}

func TestRangeSetRefusesEmptyAndOverlapping(t *testing.T) {
	var s rsSet
	if !s.Insert(newRSItem(100, 200, 1)) || !s.Insert(newRSItem(300, 400, 2)) {
		t.Fatal("inserting disjoint ranges failed")
	}
	for _, r := range [][2]uintptr{{150, 160}, {50, 101}, {199, 301}, {399, 500}, {100, 200}, {0, 1000}, {250, 250}, {260, 250}} {
		if s.Insert(newRSItem(r[0], r[1], 9)) {
			t.Errorf("Insert(%d, %d) succeeded", r[0], r[1])
		}
	}
	// Touching ranges do not overlap.
	if !s.Insert(newRSItem(200, 300, 3)) || !s.Insert(newRSItem(0, 100, 0)) {
		t.Error("inserting ranges that touch others failed")
	}
	rsCheck(t, &s, []int{0, 1, 3, 2})
	if _, ok := s.Delete(150); ok {
		t.Error("Delete of an address that starts no range succeeded")
	}
	if got := rsV(s.Delete(200)); got != 3 {
		t.Errorf("Delete(200) = %d; want 3", got)
	}
	rsCheck(t, &s, []int{0, 1, 2})
}

func TestRangeSetLookups(t *testing.T) {
	var s rsSet
	s.Insert(newRSItem(100, 200, 1))
	s.Insert(newRSItem(300, 400, 2))
	s.Insert(newRSItem(400, 450, 3))
	for _, c := range []struct {
		p           uintptr
		containing  int // -1: none
		floor, ceil int
	}{
		{0, -1, -1, 1}, {99, -1, -1, 1}, {100, 1, 1, 1}, {199, 1, 1, 2}, {200, -1, 1, 2},
		{300, 2, 2, 2}, {399, 2, 2, 3}, {400, 3, 3, 3}, {449, 3, 3, -1}, {450, -1, 3, -1},
	} {
		for _, q := range []struct {
			name string
			f    func(uintptr) (*rsItem, bool)
			want int
		}{{"Containing", s.Containing, c.containing}, {"Floor", s.Floor, c.floor}, {"Ceil", s.Ceil, c.ceil}} {
			if got := rsV(q.f(c.p)); got != q.want {
				t.Errorf("%s(%d) = %d; want %d", q.name, c.p, got, q.want)
			}
		}
	}
	if got := rsVals(s.Overlapping(nil, 150, 401)); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("Overlapping(150, 401) = %v; want [1 2 3]", got)
	}
	if got := s.Overlapping(nil, 200, 300); len(got) != 0 {
		t.Errorf("Overlapping(200, 300) = %v; want none", got)
	}
	if got := s.Overlapping(nil, 150, 150); len(got) != 0 {
		t.Errorf("Overlapping of an empty range = %v; want none", got)
	}
}

// TestRangeSetAgreesWithModel runs random inserts, deletes, lookups and
// batch removals against a sorted slice.
func TestRangeSetAgreesWithModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 18))
	var s rsSet
	var m rsModel
	const space = 1 << 16
	next := 0
	for step := range 20000 {
		switch op := rng.IntN(100); {
		case op < 50:
			start := uintptr(rng.IntN(space))
			end := start + uintptr(1+rng.IntN(64))
			ok := len(m.overlapping(start, end)) == 0
			if got := s.Insert(newRSItem(start, end, next)); got != ok {
				t.Fatalf("step %d: Insert(%d, %d) = %v; want %v", step, start, end, got, ok)
			}
			if ok {
				i, _ := slices.BinarySearchFunc(m, start, func(it rsItem, p uintptr) int { return int(it.start) - int(p) })
				m = slices.Insert(m, i, rsItem{start, end, next})
				next++
			}
		case op < 80 && len(m) > 0:
			i := rng.IntN(len(m))
			if got := rsV(s.Delete(m[i].start)); got != m[i].v {
				t.Fatalf("step %d: Delete(%d) = %d; want %d", step, m[i].start, got, m[i].v)
			}
			m = slices.Delete(m, i, i+1)
		case op < 99:
			p := uintptr(rng.IntN(space))
			end := p + uintptr(rng.IntN(200))
			if got, want := rsVals(s.Overlapping(nil, p, end)), m.overlapping(p, end); !slices.Equal(got, want) {
				t.Fatalf("step %d: Overlapping(%d, %d) = %v; want %v", step, p, end, got, want)
			}
			want := append(m.overlapping(p, p+1), -1)[0]
			if got := rsV(s.Containing(p)); got != want {
				t.Fatalf("step %d: Containing(%d) = %d; want %d", step, p, got, want)
			}
			i, _ := slices.BinarySearchFunc(m, p, func(it rsItem, p uintptr) int { return int(it.start) - int(p) })
			if got := rsV(s.Ceil(p)); got != append(rsValues(m[i:]), -1)[0] {
				t.Fatalf("step %d: Ceil(%d) = %d", step, p, got)
			}
			j := i - 1
			if i < len(m) && m[i].start == p {
				j = i
			}
			want = -1
			if j >= 0 {
				want = m[j].v
			}
			if got := rsV(s.Floor(p)); got != want {
				t.Fatalf("step %d: Floor(%d) = %d; want %d", step, p, got, want)
			}
		default:
			mod := 1 + rng.IntN(4)
			var seen []int
			n := s.DeleteFunc(func(it *rsItem) bool { seen = append(seen, it.v); return it.v%mod == 0 })
			if !slices.Equal(seen, rsValues(m)) {
				t.Fatalf("step %d: DeleteFunc saw %v; want %v", step, seen, rsValues(m))
			}
			before := len(m)
			m = slices.DeleteFunc(m, func(it rsItem) bool { return it.v%mod == 0 })
			if n != before-len(m) {
				t.Fatalf("step %d: DeleteFunc removed %d; want %d", step, n, before-len(m))
			}
		}
		if step%97 == 0 {
			rsCheck(t, &s, rsValues(m))
		}
	}
	rsCheck(t, &s, rsValues(m))
	s.DeleteFunc(func(*rsItem) bool { return true })
	rsCheck(t, &s, nil)
}

// TestRangeSetAscendingInsertsStayShallow inserts addresses in order, the
// registry's common case, and checks that the tree stays logarithmic.
func TestRangeSetAscendingInsertsStayShallow(t *testing.T) {
	var s rsSet
	const n = 1 << 16
	for i := range n {
		s.Insert(newRSItem(uintptr(i)*4096, uintptr(i+1)*4096, i))
	}
	var depth func(*rangeNode[*rsItem]) int
	depth = func(t *rangeNode[*rsItem]) int {
		if t == nil {
			return 0
		}
		return 1 + max(depth(t.left), depth(t.right))
	}
	// A treap of 2^16 nodes is about 2.99 ln n = 33 deep on average; 80
	// is far outside what a working one reaches.
	if d := depth(s.root); d > 80 {
		t.Errorf("depth %d after %d ascending inserts", d, n)
	}
	s.DeleteFunc(func(it *rsItem) bool { return it.v%2 == 0 })
	if d := depth(s.root); d > 80 {
		t.Errorf("depth %d after a batch removal", d)
	}
	rsCheck(t, &s, func() []int {
		var vs []int
		for i := 1; i < n; i += 2 {
			vs = append(vs, i)
		}
		return vs
	}())
}

// A node costs the registry three words a registration: the value and two
// links (the priority is hashed from the address, the range is the
// value's). It keeps a live buffer within its memory budget.
func TestRangeNodeIsThreeWords(t *testing.T) {
	if got, want := unsafe.Sizeof(rangeNode[*rsItem]{}), 3*unsafe.Sizeof(uintptr(0)); got != want {
		t.Errorf("a node is %d bytes; want %d", got, want)
	}
}
