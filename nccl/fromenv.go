package nccl

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/rendezvous"
)

// FromEnv joins the job that torchrun's environment describes, as a
// PyTorch process does: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT, and the job's shared secret PURECUDA_JOB_TOKEN (which a
// client must prove it knows; examples/allreduce's -np launcher sets them
// all). Rank 0 makes the UniqueID and serves it over TCP on
// MASTER_ADDR:MASTER_PORT, the others fetch it, each within ctx's
// deadline (a default one when ctx has none); then every rank joins the
// communicator (InitRank) on the device LOCAL_RANK of this host. A wrong
// token, world size or rank, a rank missing at the deadline or an
// unreachable rank 0 is an error that says which; with WORLD_SIZE=1 no
// network is used.
func FromEnv(ctx context.Context, opts ...Option) (*Comm, error) {
	return fromEnv(ctx, os.Getenv, opts)
}

func fromEnv(ctx context.Context, getenv func(string) string, opts []Option) (*Comm, error) {
	if ctx == nil {
		return nil, errors.New("nccl: FromEnv: nil context.Context")
	}
	cfg, err := rendezvous.ConfigFromEnv(getenv)
	if err != nil {
		return nil, fmt.Errorf("nccl: FromEnv: %w", err)
	}
	devs, err := cuda.Devices()
	if err != nil {
		return nil, fmt.Errorf("nccl: FromEnv: %w", err)
	}
	if cfg.LocalRank < 0 || cfg.LocalRank >= len(devs) {
		return nil, fmt.Errorf("nccl: FromEnv: LOCAL_RANK=%d, but this host has %d devices", cfg.LocalRank, len(devs))
	}
	b, err := rendezvous.Exchange(ctx, cfg, func() ([]byte, error) {
		id, err := NewUniqueID()
		if err != nil {
			return nil, err
		}
		return id.MarshalBinary()
	})
	if err != nil {
		return nil, fmt.Errorf("nccl: FromEnv: rank %d of %d: %w", cfg.Rank, cfg.WorldSize, err)
	}
	var id UniqueID
	if err := id.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("nccl: FromEnv: rank 0 served no unique id: %w", err)
	}
	return InitRank(ctx, devs[cfg.LocalRank], cfg.WorldSize, cfg.Rank, id, opts...)
}
