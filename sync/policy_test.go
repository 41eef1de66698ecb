package sync_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// A wait that cannot go by its arguments is an error, before any query:
// a nil context.Context, an unknown Mode, a negative duration. The stream
// is idle, so a wait that ignored them would return nil.
func TestBadPoliciesAreErrors(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	var ev libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(ev)) })
	testenv.Must(t, libcuda.EventRecord(ev, s))
	testenv.Must(t, sync.Event(t.Context(), ev))

	for _, c := range []struct {
		name string
		p    sync.Policy
		ctx  context.Context
		want string
	}{
		{"nil ctx", sync.DefaultPolicy, nil, "nil context.Context"},
		{"mode", sync.Policy{Mode: sync.Polling + 1}, t.Context(), "Mode(3) is not a mode"},
		{"negative mode", sync.Policy{Mode: -1}, t.Context(), "is not a mode"},
		{"spin", sync.Policy{Spin: -time.Microsecond}, t.Context(), "may not be negative"},
		{"yield", sync.Policy{Yield: -1}, t.Context(), "may not be negative"},
		{"max sleep", sync.Policy{MaxSleep: -time.Millisecond}, t.Context(), "may not be negative"},
	} {
		for what, wait := range map[string]func() error{
			"Stream":  func() error { return c.p.Stream(c.ctx, cu, s) },
			"Event":   func() error { return c.p.Event(c.ctx, ev) },
			"Context": func() error { return c.p.Context(c.ctx, cu) },
		} {
			if err := wait(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s, %s: %v, want an error saying %q", c.name, what, err, c.want)
			}
		}
	}
}
