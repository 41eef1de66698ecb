package hostmem

import "iter"

// rangeSet holds non-overlapping, non-empty address ranges [start, end),
// each with a value, in address order. It is a treap: a binary search tree
// by start that is a heap by random priority, so that insert, delete and
// the lookups take O(log n) expected, whatever the order of the addresses.
// Since the ranges do not overlap, their ends are in the same order as
// their starts, which the lookups rely on. The zero value is an empty set.
// It is not safe for concurrent use.
type rangeSet[T any] struct {
	root *rangeNode[T]
	n    int
	rnd  uint64 // xorshift state of the priorities; 0 until the first insert
}

type rangeNode[T any] struct {
	start, end  uintptr
	v           T
	prio        uint64
	left, right *rangeNode[T]
}

// Len returns the number of ranges in s.
func (s *rangeSet[T]) Len() int { return s.n }

func (s *rangeSet[T]) prio() uint64 {
	if s.rnd == 0 {
		s.rnd = 0x9e3779b97f4a7c15
	}
	s.rnd ^= s.rnd << 13
	s.rnd ^= s.rnd >> 7
	s.rnd ^= s.rnd << 17
	return s.rnd
}

// Insert adds [start, end) with value v and reports whether it did: an
// empty range, or one that overlaps a range of s, is refused.
func (s *rangeSet[T]) Insert(start, end uintptr, v T) bool {
	if end <= start {
		return false
	}
	if first, _, _, ok := s.first(start); ok && first < end {
		return false // the first range ending after start begins before end
	}
	s.root = s.insert(s.root, &rangeNode[T]{start: start, end: end, v: v, prio: s.prio()})
	s.n++
	return true
}

func (s *rangeSet[T]) insert(t, n *rangeNode[T]) *rangeNode[T] {
	if t == nil {
		return n
	}
	if n.start < t.start {
		t.left = s.insert(t.left, n)
		if t.left.prio > t.prio {
			l := t.left
			t.left, l.right = l.right, t
			return l
		}
		return t
	}
	t.right = s.insert(t.right, n)
	if t.right.prio > t.prio {
		r := t.right
		t.right, r.left = r.left, t
		return r
	}
	return t
}

// Delete removes the range that starts at start and returns its value.
func (s *rangeSet[T]) Delete(start uintptr) (v T, ok bool) {
	link := &s.root
	for t := *link; t != nil; t = *link {
		switch {
		case start < t.start:
			link = &t.left
		case start > t.start:
			link = &t.right
		default:
			*link = merge(t.left, t.right)
			s.n--
			return t.v, true
		}
	}
	return v, false
}

// merge joins two treaps, every start in a before every start in b.
func merge[T any](a, b *rangeNode[T]) *rangeNode[T] {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a.right = merge(a.right, b)
		return a
	default:
		b.left = merge(a, b.left)
		return b
	}
}

// first returns the range of lowest start among those ending after p.
func (s *rangeSet[T]) first(p uintptr) (start, end uintptr, v T, ok bool) {
	var best *rangeNode[T]
	for t := s.root; t != nil; {
		if t.end > p {
			best, t = t, t.left
		} else {
			t = t.right
		}
	}
	if best == nil {
		return 0, 0, v, false
	}
	return best.start, best.end, best.v, true
}

// Containing returns the range holding address p.
func (s *rangeSet[T]) Containing(p uintptr) (start, end uintptr, v T, ok bool) {
	start, end, v, ok = s.first(p)
	if !ok || start > p {
		var zero T
		return 0, 0, zero, false
	}
	return start, end, v, true
}

// Floor returns the range of highest start at or below p.
func (s *rangeSet[T]) Floor(p uintptr) (start, end uintptr, v T, ok bool) {
	var best *rangeNode[T]
	for t := s.root; t != nil; {
		if t.start <= p {
			best, t = t, t.right
		} else {
			t = t.left
		}
	}
	if best == nil {
		return 0, 0, v, false
	}
	return best.start, best.end, best.v, true
}

// Ceil returns the range of lowest start at or above p.
func (s *rangeSet[T]) Ceil(p uintptr) (start, end uintptr, v T, ok bool) {
	var best *rangeNode[T]
	for t := s.root; t != nil; {
		if t.start >= p {
			best, t = t, t.left
		} else {
			t = t.right
		}
	}
	if best == nil {
		return 0, 0, v, false
	}
	return best.start, best.end, best.v, true
}

// Overlapping appends to dst the values of the ranges overlapping
// [start, end), in address order.
func (s *rangeSet[T]) Overlapping(dst []T, start, end uintptr) []T {
	if end <= start {
		return dst
	}
	ascend(s.root, start, func(n *rangeNode[T]) bool {
		if n.start >= end {
			return false
		}
		dst = append(dst, n.v)
		return true
	})
	return dst
}

// From yields the ranges ending after p, in address order.
func (s *rangeSet[T]) From(p uintptr) iter.Seq2[[2]uintptr, T] {
	return func(yield func([2]uintptr, T) bool) {
		ascend(s.root, p, func(n *rangeNode[T]) bool { return yield([2]uintptr{n.start, n.end}, n.v) })
	}
}

// All yields every range of s in address order.
func (s *rangeSet[T]) All() iter.Seq2[[2]uintptr, T] { return s.From(0) }

// ascend calls f on the nodes of t that end after p, in order, until f
// returns false; it returns false if f did.
func ascend[T any](t *rangeNode[T], p uintptr, f func(*rangeNode[T]) bool) bool {
	for t != nil {
		if t.end > p { // the left subtree may end after p too
			if !ascend(t.left, p, f) || !f(t) {
				return false
			}
		} // else: so does every range to its left
		t = t.right
	}
	return true
}

// DeleteFunc removes every range whose value drop reports true, in one
// pass over s that rebuilds the tree from what stays (O(n), whatever the
// number removed), and returns how many it removed. drop sees the values
// in address order.
func (s *rangeSet[T]) DeleteFunc(drop func(T) bool) int {
	kept := make([]*rangeNode[T], 0, s.n)
	removed := 0
	ascend(s.root, 0, func(n *rangeNode[T]) bool {
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
	s.root = build(kept)
	s.n = len(kept)
	return removed
}

// build makes a treap of nodes sorted by start, each keeping its priority:
// the Cartesian tree of their priorities, with a stack, in O(n).
func build[T any](nodes []*rangeNode[T]) *rangeNode[T] {
	var stack []*rangeNode[T] // the right spine, priorities descending
	for _, n := range nodes {
		n.left, n.right = nil, nil
		var last *rangeNode[T]
		for len(stack) > 0 && stack[len(stack)-1].prio < n.prio {
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
