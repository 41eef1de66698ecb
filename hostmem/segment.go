package hostmem

import "fmt"

// Segment returns how many bytes of the buffer, from byte off on, lie in
// one registration: the most that one of the driver's copies or memsets
// may cover from there (see "Adjacent registrations"). A buffer that one
// registration covers is one segment, so Segment(0) is its Size. To copy a
// whole buffer, copy Segment(off) bytes at off, then go on from there.
// It returns ErrFreed after Free, and an error for off outside [0, Size).
func (b *Buffer) Segment(off int) (int, error) {
	defer b.st.mu.Unlock()
	if !b.lock() {
		return 0, ErrFreed
	}
	if off < 0 || off >= int(b.size) {
		return 0, fmt.Errorf("hostmem: Segment: offset %d outside the buffer's %d bytes", off, b.size)
	}
	at := uintptr(b.p) + uintptr(off)
	end := uintptr(b.p) + b.size
	for _, r := range b.st.regs { // in address order
		if r.start <= at && at < r.end {
			end = min(end, r.end)
			break
		}
	}
	return int(end - at), nil
}
