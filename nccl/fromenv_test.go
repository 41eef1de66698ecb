//go:build linux

package nccl_test

import (
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/nccl"
)

// FromEnv with WORLD_SIZE=1 needs no network: one rank, device 0.
func TestFromEnvWithOneRank(t *testing.T) {
	for k, v := range map[string]string{"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"} {
		t.Setenv(k, v)
	}
	c, err := nccl.FromEnv(testenv.Context(t))
	testenv.Must(t, err)
	if c.Rank() != 0 || c.Size() != 1 || c.Device().Ordinal() != 0 {
		t.Errorf("Rank %d Size %d Device %d", c.Rank(), c.Size(), c.Device().Ordinal())
	}
	r := rank{c: c}
	ctx, err := c.Device().Context()
	testenv.Must(t, err)
	defer ctx.Close()
	r.s, err = ctx.NewStream()
	testenv.Must(t, err)
	defer r.s.Close()
	send, recv := upload(t, r, []float32{1, 2, 3}), upload(t, r, make([]float32, 3))
	testenv.Must(t, nccl.AllReduce(c, r.s, send, recv, nccl.Sum))
	testenv.Must(t, c.Sync(testenv.Context(t), r.s))
	checkEqual(t, "AllReduce of one rank", download(t, r, recv), []float32{1, 2, 3})
	testenv.Must(t, c.Close())
	t.Setenv("LOCAL_RANK", "9")
	if _, err := nccl.FromEnv(testenv.Context(t)); err == nil || !strings.Contains(err.Error(), "LOCAL_RANK=9") {
		t.Errorf("LOCAL_RANK beyond the devices: %v", err)
	}
}
