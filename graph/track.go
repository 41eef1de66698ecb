package graph

import (
	"fmt"
	"log/slog"
)

// track is how an executable graph's launches are followed for the leases
// of the graph it runs (execState.hold), one state machine whose moves all
// go through execState.move:
//
//	recorded ──launch, noted──▶ pending ──settle, idle, a launch that records──▶ recorded
//	none, recorded, pending ──update (leases held, not standing for the old)──▶ eager
//	eager ──update (new leases that stand for the old)──▶ recorded
//	recorded, pending, eager ──update (nothing leased)──▶ none
//	none, recorded, pending, eager ──no event, or a record failed──▶ untracked
//	(any) ──Destroy──▶ destroyed
//
// Launches are noted lazily (pending: the stream and its id, no event
// recorded) until an update or Destroy must know them finished; after an
// update that had to know, every launch records the event at once
// (eager), since an event recorded at the update itself is seldom
// complete yet. Untracked leaves only for destroyed, which is final.
type track uint8

const (
	// trackNone: the graph leases nothing; last, if any, is complete.
	trackNone track = iota
	// trackRecorded: last was recorded after the latest launch (or none
	// was made since it was found complete).
	trackRecorded
	// trackPending: launches were made since last was recorded; the
	// stream of the latest and its id are noted (lastStream, lastID).
	trackPending
	// trackEager: as recorded, and each launch records last at once.
	trackEager
	// trackUntracked: a launch could not be followed by its event, or no
	// event could be made: what is leased is kept for good.
	trackUntracked
	// trackDestroyed: the executable graph is destroyed.
	trackDestroyed
)

var trackNames = [...]string{"none", "recorded", "pending", "eager", "untracked", "destroyed"}

func (t track) String() string {
	if int(t) < len(trackNames) {
		return trackNames[t]
	}
	return fmt.Sprintf("track(%d)", int(t))
}

// follows reports whether launches in state t are followed by last.
func (t track) follows() bool {
	return t == trackRecorded || t == trackPending || t == trackEager
}

// trackMoves lists the moves the machine allows besides staying.
var trackMoves = [...][]track{
	trackNone:      {trackEager, trackUntracked, trackDestroyed},
	trackRecorded:  {trackPending, trackEager, trackNone, trackUntracked, trackDestroyed},
	trackPending:   {trackRecorded, trackEager, trackNone, trackUntracked, trackDestroyed},
	trackEager:     {trackRecorded, trackNone, trackUntracked, trackDestroyed},
	trackUntracked: {trackDestroyed},
	trackDestroyed: nil,
}

// move changes st.state to to when the machine allows it (staying always
// is); otherwise it logs the broken invariant (a bug of this package),
// leaves the state as it is and returns false. st.mu held.
func (st *execState) move(to track) bool {
	if st.state == to {
		return true
	}
	for _, ok := range trackMoves[st.state] {
		if ok == to {
			st.state = to
			return true
		}
	}
	slog.Error("graph: internal error: executable graph's launch tracking", "from", st.state.String(), "to", to.String())
	return false
}
