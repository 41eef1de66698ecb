package sync

import (
	"context"
	"errors"

	"github.com/purecuda/purecuda/libcuda"
)

// Until waits with DefaultPolicy, in Polling mode, until done reports true
// or fails, or ctx ends: for a condition only a query can tell (a library's
// asynchronous state, such as NCCL's ncclCommGetAsyncError), which no
// helper thread can block on. See Policy.Until.
func Until(ctx context.Context, what string, done func() (bool, error)) error {
	return DefaultPolicy.Until(ctx, what, done)
}

// Until waits until done reports true or fails, or ctx ends, querying it
// as Policy p polls a stream: back to back for p.Spin, between yields for
// p.Yield, then on the shared poller with a backoff up to p.MaxSleep; it
// never blocks a thread, whatever p.Mode says. done must be quick and must
// not wait; it is called from the waiting goroutine and from the poller's.
// Its error is returned wrapped with what ("sync: what: ..."), ctx's as it
// is.
func (p Policy) Until(ctx context.Context, what string, done func() (bool, error)) error {
	if !p.valid(ctx) {
		return p.refuse(ctx)
	}
	if done == nil {
		return errors.New("sync: Until: nil function")
	}
	p.Mode = Polling
	t := &funcTarget{what: what, done: done}
	return wait(p, ctx, t, guardedQuery(t, queryLimit()))
}

// funcTarget is a condition that a function tells; a pointer, so that the
// poller's groups (by target) keep each wait apart.
type funcTarget struct {
	what string
	done func() (bool, error)
}

func (t *funcTarget) String() string { return t.what }

func (t *funcTarget) query(bool) error {
	ok, err := t.done()
	switch {
	case err != nil:
		return err
	case !ok:
		return libcuda.CUDA_ERROR_NOT_READY
	}
	return nil
}

// block is never called: Until waits in Polling mode.
func (t *funcTarget) block() error { return errors.New("sync: Until cannot block") }
