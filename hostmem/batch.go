package hostmem

import (
	"fmt"
	"log/slog"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Unregister batches. An unregister waits for all work in flight on the
// device and holds other threads' launches meanwhile, so retired
// registrations are ended together: when their bytes pass the budget
// (SetRetiredLimit), when a context wait found the device idle, and when
// Trim or Drain asks. The owner starts one batch at a time, on a goroutine
// of its own so that a batch stuck behind work that never ends holds no
// other release; the batch reports back through the inbox.
type batchState struct {
	running  bool
	check    bool       // registrations were retired: compare with the budget
	idle     bool       // a good moment: run a batch whatever the budget
	requests []chan int // Trim and Drain requests for the next batch
	serving  []chan int // those the running batch answers
}

func (b *batchState) wanted() bool { return b.check || b.idle || len(b.requests) > 0 }

// runBatches starts a batch when one is wanted and none runs.
func (o *owner) runBatches() {
	b := &o.batch
	if b.running || !b.wanted() {
		return
	}
	force := b.idle || len(b.requests) > 0
	b.check, b.idle = false, false
	if !force && !reg.overLimit() {
		return
	}
	batch := reg.collect()
	b.serving, b.requests = b.requests, b.serving[:0]
	if len(batch) == 0 {
		b.reply(0)
		return
	}
	b.running = true
	go unregisterBatch(batch)
}

// batchDone is the end of the running batch, which ended n registrations.
func (o *owner) batchDone(n int) {
	b := &o.batch
	b.running = false
	b.reply(n)
	b.check = true // registrations retired meanwhile may pass the budget
}

func (b *batchState) reply(n int) {
	for i, c := range b.serving {
		c <- n // buffered
		b.serving[i] = nil
	}
	b.serving = b.serving[:0]
}

// unregisterBatch ends each registration of batch, in relaxed capture
// mode with its context current, and tells the owner.
func unregisterBatch(batch []*registration) {
	unregister(batch)
	post(func() { inbox.batched = len(batch) })
}

// unregister ends each registration of batch.
func unregister(batch []*registration) {
	for _, r := range batch {
		p := r.p
		done := false
		err := sync.RelaxedIn(r.ctx, func() error {
			if r.kind == allocated {
				if err := libcuda.MemFreeHost(p); err != nil {
					return dl.Failed("", "cuMemFreeHost", err)
				}
			} else if err := libcuda.MemHostUnregister(p); err != nil {
				return dl.Failed("", "cuMemHostUnregister", err)
			}
			done = true
			return nil
		})
		if done && err != nil {
			// The driver let the memory go; only putting the thread back
			// (its capture mode or context) failed after. The registration
			// has ended all the same: kept, it would stay pinned for good
			// and serve wraps of memory the driver no longer maps.
			slog.Error("hostmem: host memory released, but restoring the thread after failed",
				"addr", fmt.Sprintf("%#x", r.start), "size", r.size(), "err", err)
			err = nil
		}
		reg.ended(r, err)
	}
}

// requestBatch asks the owner for a batch of every registration retired
// now, and returns the channel that receives how many it ended.
func requestBatch() chan int {
	c := make(chan int, 1)
	post(func() { inbox.trims = append(inbox.trims, c) })
	return c
}

// checkBudget tells the owner that registrations were retired outside it.
func checkBudget() {
	post(func() { inbox.budget = true })
}

// logKept logs, once per registration, that its memory stays pinned.
func logKept(r *registration, err error) {
	logFailure(r.ctx, err, "hostmem: releasing host memory failed; it stays pinned for good",
		"addr", fmt.Sprintf("%#x", r.start), "size", r.size())
}
