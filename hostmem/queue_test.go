package hostmem

import "testing"

// A queue whose uses are cut as fast as they come, never running empty
// (a steady loop's stream, the owner finishing a tick's uses at a time),
// reuses its room in place: after the first rounds no push allocates.
// Before, a cut that left more uses than it dropped only moved the start
// of the slice, and each append past the end of its capacity
// reallocated the whole room (some 30 bytes a cycle of a wrap/use/free
// loop).
func TestQueueSlidingWindowAllocatesNothing(t *testing.T) {
	var q queue
	seq := uint64(0)
	push := func(n int) {
		for range n {
			seq++
			q.push(waiting{u: use{seq: seq}})
		}
	}
	cut := func(k int) {
		clear(q.uses[:k])
		q.cut(k)
	}
	push(300) // in flight
	rounds := func() {
		// A tick's uses come; those of the tick before are finished.
		for range 100 {
			push(100)
			cut(100)
		}
	}
	rounds()
	// AllocsPerRun's average is a whole number: 100 rounds a run.
	if n := testing.AllocsPerRun(10, rounds); n != 0 {
		t.Errorf("%v allocations in 100 rounds of 100 pushes and a cut of 100; want none", n)
	}
	if len(q.uses) != 300 {
		t.Fatalf("%d uses in the queue, want 300", len(q.uses))
	}
	for i, w := range q.uses {
		if want := seq - 299 + uint64(i); w.u.seq != want {
			t.Fatalf("use %d has seq %d, want %d: order lost", i, w.u.seq, want)
		}
	}
	// The room outside the uses is zero: nothing kept reachable there.
	for i := range q.buf {
		if (i < q.head || i >= q.head+len(q.uses)) && q.buf[i] != (waiting{}) {
			t.Fatalf("room %d outside the uses [%d, %d) holds %+v", i, q.head, q.head+len(q.uses), q.buf[i])
		}
	}
	if len(q.buf) > 1024 {
		t.Errorf("room for %d uses with 400 at most in the queue; want it bounded", len(q.buf))
	}
	// Out of order (a use recorded before, freed after): kept in seq order.
	q.push(waiting{u: use{seq: seq - 150}})
	for i := 1; i < len(q.uses); i++ {
		if q.uses[i-1].u.seq > q.uses[i].u.seq {
			t.Fatalf("uses out of seq order at %d", i)
		}
	}
	cut(len(q.uses))
	if q.head != 0 || len(q.uses) != 0 {
		t.Fatalf("an emptied queue: head %d, %d uses", q.head, len(q.uses))
	}
}
