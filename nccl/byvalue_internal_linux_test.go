//go:build linux && (amd64 || arm64) && !gpu

package nccl

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// TestInitRankPassesTheIDByValue calls the generated CommInitRank and
// CommInitRankConfig, which take the 128-byte ncclUniqueId by value, into
// the C stand-in (compiled by the C compiler, which reads the id where the
// platform's ABI puts it: on the stack on System V AMD64, through a pointer
// to a copy on arm64): the stand-in refuses an id whose magic bytes it
// does not find, and the rank and config after the id must arrive too —
// the two ranks meet in one communicator of two, each with its own rank.
// The caller's id is not changed by the callee's copy.
func TestInitRankPassesTheIDByValue(t *testing.T) {
	ctx := testenv.PrimaryContext(t, 0)
	var id CUniqueID
	if err := GetUniqueId(&id); err != nil {
		t.Fatal(err)
	}
	saved := id
	cf := newConfig(nil)
	type result struct {
		h   Handle
		err error
	}
	done := make(chan result, 2)
	for rank := range 2 {
		go func() {
			var h Handle
			err := libcuda.WithContext(ctx, func() error {
				if rank == 0 {
					return CommInitRank(&h, 2, id, 0)
				}
				return CommInitRankConfig(&h, 2, id, 1, &cf.c)
			})
			done <- result{h, err}
		}()
	}
	for range 2 {
		r := testenv.Recv(t, done, "an init")
		if r.err != nil {
			t.Fatalf("init by value: %v (structsOnStack=%v)", r.err, structsOnStack)
		}
		var rank, count int32
		if err := CommUserRank(r.h, &rank); err != nil {
			t.Fatal(err)
		}
		if err := CommCount(r.h, &count); err != nil {
			t.Fatal(err)
		}
		if count != 2 || rank < 0 || rank > 1 {
			t.Errorf("rank %d of %d, want a rank of 2", rank, count)
		}
		defer func() {
			if err := CommDestroy(r.h); err != nil {
				t.Error(err)
			}
		}()
	}
	if id != saved {
		t.Error("the callee's copy of the id reached the caller's")
	}
	var bad CUniqueID
	var h Handle
	if err := libcuda.WithContext(ctx, func() error { return CommInitRank(&h, 1, bad, 0) }); err != InvalidArgument {
		t.Errorf("a zero id: %v, want ncclInvalidArgument", err)
	}
}
