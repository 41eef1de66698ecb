package rendezvous_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/purecuda/purecuda/internal/rendezvous"
)

// Three ranks of a job, here goroutines of one process on the loopback
// address, agree on rank 0's bytes. In a real job each rank is a process
// (Launch, torchrun, Slurm) that builds its Config with
// rendezvous.ConfigFromEnv(os.Getenv).
func ExampleExchange() {
	// A free port for rank 0 (a job would take MASTER_PORT).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const world = 3
	got := make([]string, world)
	var wg sync.WaitGroup
	for rank := range world {
		cfg := rendezvous.Config{Rank: rank, WorldSize: world, Addr: addr, Token: "a secret of the job, 16+ bytes"}
		wg.Go(func() {
			data, err := rendezvous.Exchange(ctx, cfg, func() ([]byte, error) {
				return []byte("the NCCL unique id"), nil // called by rank 0 only
			})
			if err != nil {
				got[rank] = err.Error()
				return
			}
			got[rank] = string(data)
		})
	}
	wg.Wait()
	for rank, s := range got {
		fmt.Printf("rank %d: %s\n", rank, s)
	}
	// Output:
	// rank 0: the NCCL unique id
	// rank 1: the NCCL unique id
	// rank 2: the NCCL unique id
}

// ConfigFromEnv reads what torchrun (or Launch) sets; a program passes
// os.Getenv, here a map stands in for the environment.
func ExampleConfigFromEnv() {
	env := map[string]string{
		"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1",
		"MASTER_ADDR": "::1", "MASTER_PORT": "29500",
		"PURECUDA_JOB_TOKEN": "9f86d081884c7d659a2feaa0c55ad015",
	}
	cfg, err := rendezvous.ConfigFromEnv(func(k string) string { return env[k] })
	fmt.Println(cfg.Rank, cfg.WorldSize, cfg.LocalRank, cfg.Addr, err)

	delete(env, "PURECUDA_JOB_TOKEN")
	_, err = rendezvous.ConfigFromEnv(func(k string) string { return env[k] })
	fmt.Println(err != nil)
	// Output:
	// 1 2 1 [::1]:29500 <nil>
	// true
}
