package hostmem

// index is the registry's ordered set of registrations, by start address;
// they never overlap, so they are in end order too. It is a treap: a
// binary search tree by address that is a heap by random priority, so
// that insertion, deletion and the search for a range take O(log n)
// expected time however the addresses arrive.
type index struct {
	root *inode
	n    int
	seed uint64
}

type inode struct {
	r           *registration
	prio        uint64
	left, right *inode
}

// rand returns the next priority (xorshift64*).
func (x *index) rand() uint64 {
	if x.seed == 0 {
		x.seed = 0x9e3779b97f4a7c15
	}
	x.seed ^= x.seed >> 12
	x.seed ^= x.seed << 25
	x.seed ^= x.seed >> 27
	return x.seed * 0x2545f4914f6cdd1d
}

// split cuts t into the nodes that start before key and the others.
func split(t *inode, key uintptr) (l, r *inode) {
	if t == nil {
		return nil, nil
	}
	if t.r.start < key {
		t.right, r = split(t.right, key)
		return t, r
	}
	l, t.left = split(t.left, key)
	return l, t
}

// merge joins l and r, every node of l starting before every node of r.
func merge(l, r *inode) *inode {
	switch {
	case l == nil:
		return r
	case r == nil:
		return l
	case l.prio > r.prio:
		l.right = merge(l.right, r)
		return l
	}
	r.left = merge(l, r.left)
	return r
}

// insert adds r, which overlaps none of x's registrations.
func (x *index) insert(r *registration) {
	l, g := split(x.root, r.start)
	x.root = merge(merge(l, &inode{r: r, prio: x.rand()}), g)
	x.n++
}

// remove deletes r if x holds it.
func (x *index) remove(r *registration) {
	l, g := split(x.root, r.start)
	m, g := split(g, r.start+1)
	if m != nil && m.r == r {
		x.n--
		m = merge(m.left, m.right) // empty: m was the one node at r.start
	}
	x.root = merge(merge(l, m), g)
}

// overlapping appends to dst, in address order, the registrations that
// overlap [start, end).
func (x *index) overlapping(dst []*registration, start, end uintptr) []*registration {
	return appendOverlapping(dst, x.root, start, end)
}

func appendOverlapping(dst []*registration, t *inode, start, end uintptr) []*registration {
	for t != nil {
		switch {
		case t.r.start >= end:
			t = t.left
		case t.r.end <= start:
			t = t.right
		default:
			dst = appendOverlapping(dst, t.left, start, end)
			dst = append(dst, t.r)
			t = t.right
		}
	}
	return dst
}

// each calls f for every registration in address order.
func (x *index) each(f func(*registration)) { walk(x.root, f) }

func walk(t *inode, f func(*registration)) {
	for t != nil {
		walk(t.left, f)
		f(t.r)
		t = t.right
	}
}
