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
