package hostmem

import "github.com/purecuda/purecuda/libcuda"

// Hold keeps the buffer usable for work that is being submitted, for
// callers that submit it in more than one step (look up the address,
// call the driver, then Use): until the matching Unhold, a Free of the
// buffer takes effect for the memory only once the holds have ended, so
// the Use that follows the submission still counts, and the release waits
// for that work too. Meanwhile DevicePtr, Segment and Use work as before
// the Free; a Hold after the Free returns ErrFreed. It returns the
// buffer's device address.
//
// Hold and Unhold make no driver call and allocate nothing. Hold for no
// longer than a submission: a release waits for every Unhold.
func (b *Buffer) Hold() (libcuda.Deviceptr, error) {
	st := b.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.gen != b.gen || st.freed {
		return 0, ErrFreed
	}
	st.holds++
	return st.dptr, nil
}

// Unhold ends a Hold, after the Use of the work submitted (or without one
// when nothing was). The last Unhold after a Free hands the release over.
func (b *Buffer) Unhold() {
	st := b.st
	st.mu.Lock()
	if st.gen != b.gen || st.holds == 0 {
		st.mu.Unlock()
		return // no Hold of this buffer in progress: nothing to end
	}
	st.holds--
	ready := st.holds == 0 && st.freed
	if ready {
		st.readyLocked()
	}
	st.mu.Unlock()
	if ready {
		handOver(st, true)
	}
}
