package graph

import (
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
)

// The launch-tracking machine allows exactly the moves its diagram draws
// (spelled out here on their own, not read from trackMoves), and staying;
// any other move is refused, leaves the state as it was and is logged at
// error level, naming both states.
func TestExecTrackingAllowsOnlyTheDrawnMoves(t *testing.T) {
	legal := map[[2]track]bool{}
	for _, m := range [][2]track{
		{trackNone, trackEager}, // an update to a graph that leases
		{trackNone, trackUntracked},
		{trackNone, trackDestroyed},
		{trackRecorded, trackPending}, // a launch noted lazily
		{trackRecorded, trackEager},   // an update that had to know
		{trackRecorded, trackNone},    // an update to a graph that leases nothing
		{trackRecorded, trackUntracked},
		{trackRecorded, trackDestroyed},
		{trackPending, trackRecorded}, // settled, found idle, or a launch that records
		{trackPending, trackEager},
		{trackPending, trackNone},
		{trackPending, trackUntracked},
		{trackPending, trackDestroyed},
		{trackEager, trackRecorded}, // an update whose leases stand for the old
		{trackEager, trackNone},
		{trackEager, trackUntracked},
		{trackEager, trackDestroyed},
		{trackUntracked, trackDestroyed},
	} {
		legal[m] = true
	}
	all := []track{trackNone, trackRecorded, trackPending, trackEager, trackUntracked, trackDestroyed}
	for _, from := range all {
		for _, to := range all {
			log := testenv.CaptureErrors(t)
			st := &execState{state: from}
			want := from == to || legal[[2]track{from, to}]
			if got := st.move(to); got != want {
				t.Errorf("move %v → %v = %v, want %v", from, to, got, want)
			}
			msgs := log.Messages()
			if want {
				if st.state != to {
					t.Errorf("after the legal move %v → %v the state is %v", from, to, st.state)
				}
				if len(msgs) != 0 {
					t.Errorf("the legal move %v → %v logged %q", from, to, msgs)
				}
				continue
			}
			if st.state != from {
				t.Errorf("after the refused move %v → %v the state is %v, want it unchanged", from, to, st.state)
			}
			if len(msgs) != 1 || !strings.Contains(msgs[0], from.String()) || !strings.Contains(msgs[0], to.String()) {
				t.Errorf("the refused move %v → %v logged %q, want one error naming both states", from, to, msgs)
			}
		}
	}
}

// Every state has a name of its own, and an unknown value says its
// number.
func TestExecTrackingStatesHaveNames(t *testing.T) {
	seen := map[string]track{}
	for tr := trackNone; tr <= trackDestroyed; tr++ {
		name := tr.String()
		if other, ok := seen[name]; ok || strings.HasPrefix(name, "track(") {
			t.Errorf("state %d is named %q (as %d)", tr, name, other)
		}
		seen[name] = tr
	}
	if got := track(200).String(); got != "track(200)" {
		t.Errorf("track(200).String() = %q", got)
	}
}
