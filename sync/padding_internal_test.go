package sync

import (
	"testing"
	"unsafe"
)

// The registry's word and the GOMAXPROCS that every wait reads have 64
// bytes of nothing on either side, so no other variable shares a cache
// line with them: a counter written by another core (the poller's, which
// the linker had placed beside the word) would make each wait's atomic
// addition a cache miss.
func TestTheWaitsHotWordsHaveTheirCacheLinesToThemselves(t *testing.T) {
	for _, w := range []struct {
		name               string
		before, size, word uintptr
	}{
		{"state", unsafe.Offsetof(state.Uint64), unsafe.Sizeof(state), unsafe.Sizeof(state.Uint64)},
		{"procs", unsafe.Offsetof(procs.Int32), unsafe.Sizeof(procs), unsafe.Sizeof(procs.Int32)},
	} {
		if after := w.size - w.before - w.word; w.before < 64 || after < 64-w.word {
			t.Errorf("%s: %d bytes before the word and %d after; want 64 and %d", w.name, w.before, after, 64-w.word)
		}
	}
}
