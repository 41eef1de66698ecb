package hostmem

import (
	"context"
	"errors"
	"fmt"

	"github.com/purecuda/purecuda/sync"
)

// Context-wide waits: a release with a use that no event tracks (a buffer
// never used on a stream, or used on the legacy or per-thread stream
// during a capture) waits for all work of its context. The releases of a
// context share one wait, however many need it: those that arrive while
// it runs wait for the next, since the running one may have started
// before their work was submitted.
//
// cuCtxSynchronize is refused during any capture, so while captures are
// in progress the wait is postponed (sync.Postpone) until the last one
// ends: a notification, never a timer. A capture that starts while the
// wait runs waits for it only until the call is inside the driver (see
// sync's Contexts), however long the context's work takes.
type ctxGroup struct {
	waiting   []*state // covered by the wait in progress
	next      []*state // waiting for the next wait
	running   bool
	postponed bool
}

// ctxResult is the end of a context's wait. Contexts are told apart by
// their handle and unique id (cuCtxGetId): the driver may give a destroyed
// context's handle to a new one, whose releases must not share the dead
// one's wait.
type ctxResult struct {
	ctx ctxKey
	err error
}

// needContext makes st's release wait for its whole context.
func (o *owner) needContext(st *state) {
	k := ctxKey{st.ctx, st.ctxID}
	g := o.groups[k]
	if g == nil {
		g = &ctxGroup{}
		o.groups[k] = g
	}
	g.next = append(g.next, st)
	if g.postponed {
		setPostponed(1)
	}
	o.startGroup(k, g)
}

// startGroup starts the wait of the releases in g.next, unless a wait runs
// or waits for captures to end.
func (o *owner) startGroup(ctx ctxKey, g *ctxGroup) {
	if g.running || g.postponed || len(g.next) == 0 {
		if !g.running && !g.postponed {
			delete(o.groups, ctx)
		}
		return
	}
	g.waiting, g.next = g.next, nil
	g.running = true
	go func() {
		err := sync.Context(context.Background(), ctx.ctx)
		post(func() { inbox.ctxDone = append(inbox.ctxDone, ctxResult{ctx, err}) })
	}()
}

// takeContexts handles the finished and the postponed context waits.
func (o *owner) takeContexts() {
	for i, r := range o.ctxDone {
		o.ctxDone[i] = ctxResult{}
		o.contextDone(r)
	}
	o.ctxDone = o.ctxDone[:0]
	for _, ctx := range o.retry {
		if g := o.groups[ctx]; g != nil && g.postponed {
			g.postponed = false
			setPostponed(-len(g.next))
			o.startGroup(ctx, g)
		}
	}
	o.retry = o.retry[:0]
}

// contextDone applies the result of a context's wait to its releases.
func (o *owner) contextDone(r ctxResult) {
	g := o.groups[r.ctx]
	if g == nil {
		return
	}
	g.running = false
	sts := g.waiting
	g.waiting = nil
	switch {
	case errors.Is(r.err, sync.ErrCapturing):
		g.next = append(sts, g.next...)
		g.postponed = true
		setPostponed(len(g.next))
		ctx := r.ctx
		sync.Postpone(func() { post(func() { inbox.retry = append(inbox.retry, ctx) }) })
		return
	case r.err != nil:
		// One failure, logged once, for every release that shared it;
		// logged before the releases end, so that a Wait that returns
		// after them finds it logged.
		var bytes uintptr
		for _, st := range sts {
			bytes += st.size
		}
		logFailure(r.ctx.ctx, r.err, "hostmem: waiting for the context failed; the memory of its releases stays pinned for good",
			"context", fmt.Sprintf("%#x", uintptr(r.ctx.ctx)), "releases", len(sts), "bytes", bytes)
		for _, st := range sts {
			o.keep(st)
		}
	default:
		for _, st := range sts {
			o.retire(st)
		}
		// The context was idle just now: a good moment for a batch.
		o.batch.check = true
		o.batch.idle = true
	}
	o.startGroup(r.ctx, g)
}

func setPostponed(n int) {
	inbox.mu.Lock()
	inbox.postponed += n
	inbox.mu.Unlock()
}
