package hostmem

import "iter"

// ranged is what a rangeSet holds: a value that knows its address range
// [start, end), which must not change while the value is in a set.
type ranged interface {
	bounds() (start, end uintptr)
}

// rangeSet holds values with non-overlapping, non-empty address ranges, in
// address order. It is a treap: a binary search tree by start that is a
// heap by a priority hashed from start, so that insert, delete and the
// lookups take O(log n) expected, whatever the order of the addresses. A
// node is three words (24 bytes): the value and two links. Since the ranges
// do not overlap, their ends are in the same order as their starts, which
// the lookups rely on. The zero value is an empty set. It is not safe for
// concurrent use.
type rangeSet[T ranged] struct {
	root *rangeNode[T]
	n    int
}

type rangeNode[T ranged] struct {
	v           T
	left, right *rangeNode[T]
}

func (n *rangeNode[T]) start() uintptr { s, _ := n.v.bounds(); return s }
func (n *rangeNode[T]) end() uintptr   { _, e := n.v.bounds(); return e }

// prio is n's heap priority: a hash (splitmix64's finisher) of its start,
// so that addresses in any order make a tree of expected depth O(log n).
func (n *rangeNode[T]) prio() uint64 {
	x := uint64(n.start())
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// higher orders priorities; ties (equal hashes) fall back to the address.
func rsHigher[T ranged](a, b *rangeNode[T]) bool {
	pa, pb := a.prio(), b.prio()
	return pa > pb || pa == pb && a.start() > b.start()
}

// Len returns the number of values in s.
func (s *rangeSet[T]) Len() int { return s.n }

// Insert adds v and reports whether it did: a value with an empty range,
// or one that overlaps a range of s, is refused.
func (s *rangeSet[T]) Insert(v T) bool {
	start, end := v.bounds()
	if end <= start {
		return false
	}
	if first := s.first(start); first != nil && first.start() < end {
		return false // the first range ending after start begins before end
	}
	s.root = rsInsert(s.root, &rangeNode[T]{v: v}, start)
	s.n++
	return true
}

func rsInsert[T ranged](t, n *rangeNode[T], start uintptr) *rangeNode[T] {
	if t == nil {
		return n
	}
	if start < t.start() {
		t.left = rsInsert(t.left, n, start)
		if rsHigher(t.left, t) {
			l := t.left
			t.left, l.right = l.right, t
			return l
		}
		return t
	}
	t.right = rsInsert(t.right, n, start)
	if rsHigher(t.right, t) {
		r := t.right
		t.right, r.left = r.left, t
		return r
	}
	return t
}

// Delete removes the value whose range starts at start and returns it.
func (s *rangeSet[T]) Delete(start uintptr) (v T, ok bool) {
	link := &s.root
	for t := *link; t != nil; t = *link {
		switch ts := t.start(); {
		case start < ts:
			link = &t.left
		case start > ts:
			link = &t.right
		default:
			*link = rsMerge(t.left, t.right)
			s.n--
			return t.v, true
		}
	}
	return v, false
}

// merge joins two treaps, every start in a before every start in b.
func rsMerge[T ranged](a, b *rangeNode[T]) *rangeNode[T] {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case rsHigher(a, b):
		a.right = rsMerge(a.right, b)
		return a
	default:
		b.left = rsMerge(a, b.left)
		return b
	}
}

// first returns the node of lowest start among those ending after p.
func (s *rangeSet[T]) first(p uintptr) *rangeNode[T] {
	var best *rangeNode[T]
	for t := s.root; t != nil; {
		if t.end() > p {
			best, t = t, t.left
		} else {
			t = t.right
		}
	}
	return best
}

func rsValue[T ranged](n *rangeNode[T]) (v T, ok bool) {
	if n == nil {
		return v, false
	}
	return n.v, true
}

// Containing returns the value whose range holds address p.
func (s *rangeSet[T]) Containing(p uintptr) (v T, ok bool) {
	if n := s.first(p); n != nil && n.start() <= p {
		return n.v, true
	}
	return v, false
}

// Floor returns the value of highest start at or below p.
func (s *rangeSet[T]) Floor(p uintptr) (T, bool) {
	var best *rangeNode[T]
	for t := s.root; t != nil; {
		if t.start() <= p {
			best, t = t, t.right
		} else {
			t = t.left
		}
	}
	return rsValue(best)
}

// Ceil returns the value of lowest start at or above p.
func (s *rangeSet[T]) Ceil(p uintptr) (T, bool) {
	var best *rangeNode[T]
	for t := s.root; t != nil; {
		if t.start() >= p {
			best, t = t, t.left
		} else {
			t = t.right
		}
	}
	return rsValue(best)
}

// Overlapping appends to dst the values whose ranges overlap [start, end),
// in address order.
func (s *rangeSet[T]) Overlapping(dst []T, start, end uintptr) []T {
	if end <= start {
		return dst
	}
	rsAscend(s.root, start, func(n *rangeNode[T]) bool {
		if n.start() >= end {
			return false
		}
		dst = append(dst, n.v)
		return true
	})
	return dst
}

// From yields the values whose ranges end after p, in address order.
func (s *rangeSet[T]) From(p uintptr) iter.Seq[T] {
	return func(yield func(T) bool) {
		rsAscend(s.root, p, func(n *rangeNode[T]) bool { return yield(n.v) })
	}
}

// All yields every value of s in address order.
func (s *rangeSet[T]) All() iter.Seq[T] { return s.From(0) }

// ascend calls f on the nodes of t that end after p, in order, until f
// returns false; it returns false if f did.
func rsAscend[T ranged](t *rangeNode[T], p uintptr, f func(*rangeNode[T]) bool) bool {
	for t != nil {
		if t.end() > p { // the left subtree may end after p too
			if !rsAscend(t.left, p, f) || !f(t) {
				return false
			}
		} // else: so does every range to its left
		t = t.right
	}
	return true
}

// DeleteFunc removes every value for which drop reports true, in one pass
// over s that rebuilds the tree from what stays (O(n), whatever the number
// removed), and returns how many it removed. drop sees the values in
// address order.
func (s *rangeSet[T]) DeleteFunc(drop func(T) bool) int {
	kept := make([]*rangeNode[T], 0, s.n)
	removed := 0
	rsAscend(s.root, 0, func(n *rangeNode[T]) bool {
		if drop(n.v) {
			removed++
		} else {
			kept = append(kept, n)
		}
		return true
	})
	if removed == 0 {
		return 0
	}
	s.root = rsBuild(kept)
	s.n = len(kept)
	return removed
}

// build makes a treap of nodes sorted by start: the Cartesian tree of
// their priorities, made with a stack in O(n).
func rsBuild[T ranged](nodes []*rangeNode[T]) *rangeNode[T] {
	var stack []*rangeNode[T] // the right spine, priorities descending
	for _, n := range nodes {
		n.left, n.right = nil, nil
		var last *rangeNode[T]
		for len(stack) > 0 && rsHigher(n, stack[len(stack)-1]) {
			last = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		}
		n.left = last
		if len(stack) > 0 {
			stack[len(stack)-1].right = n
		}
		stack = append(stack, n)
	}
	if len(stack) == 0 {
		return nil
	}
	return stack[0]
}
