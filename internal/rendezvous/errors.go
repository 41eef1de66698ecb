package rendezvous

import (
	"errors"
	"fmt"
	"strings"
)

// The errors of Exchange, for errors.Is; the error returned names the
// ranks and the address.
var (
	// ErrWrongToken: rank 0 refused a rank whose job token differs, or a
	// rank found that the peer it reached at rank 0's address does not
	// know the token.
	ErrWrongToken = errors.New("rendezvous: wrong job token")
	// ErrWorldSize: a rank's world size differs from rank 0's.
	ErrWorldSize = errors.New("rendezvous: world sizes differ")
	// ErrDuplicateRank: another process already arrived as this rank.
	ErrDuplicateRank = errors.New("rendezvous: duplicate rank")
	// ErrRankRange: a rank is negative or not below the world size.
	ErrRankRange = errors.New("rendezvous: rank out of range")
	// ErrMissingRanks: the deadline passed before every rank arrived
	// (rank 0's error is a *MissingRanksError listing them; another
	// rank's says that rank 0 gave up, or that the payload did not come
	// before its own deadline).
	ErrMissingRanks = errors.New("rendezvous: ranks missing")
	// ErrUnreachable: a rank could not reach rank 0 before its deadline.
	ErrUnreachable = errors.New("rendezvous: rank 0 unreachable")
	// ErrProtocol: a peer sent something that is not this protocol, or
	// not this version of it.
	ErrProtocol = errors.New("rendezvous: protocol error")
	// ErrPayload: the payload is larger than MaxPayload.
	ErrPayload = errors.New("rendezvous: payload too large")
)

// MissingRanksError is rank 0's error when its context ended before every
// rank had the payload. It matches ErrMissingRanks, and the context's
// error (context.DeadlineExceeded or context.Canceled).
type MissingRanksError struct {
	// Addr is where rank 0 listened.
	Addr string
	// WorldSize is the job's number of ranks.
	WorldSize int
	// Absent are the ranks that were not there at the end, in
	// increasing order: they never arrived, or they left (their own
	// deadline passed, say) before the world was complete.
	Absent []int
	// Unacknowledged are the ranks that were there when the world was
	// complete but did not confirm that they received the payload. (Ranks
	// that arrived and were waiting for an incomplete world are in
	// neither list.)
	Unacknowledged []int
	// Cause is the context's error.
	Cause error
}

func (e *MissingRanksError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rendezvous: rank 0 at %s: %v before every rank of %d had the payload", e.Addr, e.Cause, e.WorldSize)
	if len(e.Absent) > 0 {
		fmt.Fprintf(&b, "; missing ranks (not there at the end): %s", rankList(e.Absent))
	}
	if len(e.Unacknowledged) > 0 {
		fmt.Fprintf(&b, "; ranks that arrived but did not acknowledge the payload: %s", rankList(e.Unacknowledged))
	}
	return b.String()
}

// Unwrap makes the error match ErrMissingRanks and its cause.
func (e *MissingRanksError) Unwrap() []error { return []error{ErrMissingRanks, e.Cause} }

// rankList writes ranks as "1 2 5", shortened after 32 of them.
func rankList(ranks []int) string {
	var b strings.Builder
	for i, r := range ranks {
		if i == 32 {
			fmt.Fprintf(&b, " … (%d in all)", len(ranks))
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, r)
	}
	return b.String()
}
