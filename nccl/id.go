package nccl

import (
	"encoding/hex"
	"fmt"
)

// UniqueID is what the ranks of a communicator agree on before they can
// talk: rank 0 makes it (NewUniqueID), sends it to the others by any means
// (it marshals to 128 bytes, or 256 hexadecimal digits), and every rank
// passes it to InitRank. It is comparable; the zero UniqueID is no id.
type UniqueID [NCCL_UNIQUE_ID_BYTES]byte

// NewUniqueID asks NCCL for a new id (ncclGetUniqueId). With the real NCCL
// this opens the bootstrap's listening socket in this process: call it on
// the rank that serves the id, rank 0 by convention.
func NewUniqueID() (UniqueID, error) {
	var c CUniqueID
	if err := GetUniqueId(&c); err != nil {
		return UniqueID{}, callErr("ncclGetUniqueId", 0, err)
	}
	return UniqueID(c.Internal), nil
}

// MarshalBinary returns the id's 128 bytes.
func (id UniqueID) MarshalBinary() ([]byte, error) { return id[:], nil }

// UnmarshalBinary sets the id from 128 bytes; other lengths are an error.
func (id *UniqueID) UnmarshalBinary(b []byte) error {
	if len(b) != len(id) {
		return fmt.Errorf("nccl: UniqueID.UnmarshalBinary: %d bytes, want %d", len(b), len(id))
	}
	copy(id[:], b)
	return nil
}

// MarshalText returns the id as 256 lower-case hexadecimal digits.
func (id UniqueID) MarshalText() ([]byte, error) {
	out := make([]byte, hex.EncodedLen(len(id)))
	hex.Encode(out, id[:])
	return out, nil
}

// UnmarshalText sets the id from 256 hexadecimal digits (either case).
func (id *UniqueID) UnmarshalText(b []byte) error {
	if len(b) != hex.EncodedLen(len(id)) {
		return fmt.Errorf("nccl: UniqueID.UnmarshalText: %d characters, want %d", len(b), hex.EncodedLen(len(id)))
	}
	var v UniqueID
	if _, err := hex.Decode(v[:], b); err != nil {
		return fmt.Errorf("nccl: UniqueID.UnmarshalText: %w", err)
	}
	*id = v
	return nil
}

// String is the id in hexadecimal, as MarshalText.
func (id UniqueID) String() string { return hex.EncodeToString(id[:]) }
