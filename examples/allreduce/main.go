// Command allreduce measures NCCL's all-reduce over the GPUs of one host,
// one process per GPU, and prints the table nccl-tests' all_reduce_perf
// prints: for each size from -minbytes to -maxbytes (doubling), the time
// of one all-reduce of float32 sums, the algorithm bandwidth (size / time)
// and the bus bandwidth (algbw × 2(n-1)/n, what each GPU's links carry in
// a ring), and the number of wrong elements.
//
//	allreduce -np 8 -maxbytes 1G
//
// With -np N it launches N copies of itself, as torchrun would
// (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT and a fresh
// PURECUDA_JOB_TOKEN), each on its own GPU; N larger than the number of
// GPUs is an error. Started by torchrun or a launcher of its own (RANK is
// set), it is one rank of the job. With neither, it runs one rank alone.
// Rank 0 prints the table; every rank checks its results, and the program
// exits with status 1 when any element is wrong.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/rendezvous"
	"github.com/purecuda/purecuda/nccl"
)

// options are the command's flags.
type options struct {
	np                 int
	minBytes, maxBytes int64
	iters, warmup      int
	timeout            time.Duration
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "allreduce:", err)
		os.Exit(1)
	}
}

// run is the program, with its arguments, output and environment given.
func run(args []string, out io.Writer, getenv func(string) string) error {
	var o options
	fs := flag.NewFlagSet("allreduce", flag.ContinueOnError)
	fs.IntVar(&o.np, "np", 0, "launch `N` ranks on this host, one per GPU (0: be one rank, as the environment says)")
	minB := fs.String("minbytes", "8", "the smallest `size` (B, K, M or G suffix)")
	maxB := fs.String("maxbytes", "128M", "the largest `size` (B, K, M or G suffix)")
	fs.IntVar(&o.iters, "iters", 20, "timed all-reduces per size")
	fs.IntVar(&o.warmup, "warmup", 5, "untimed all-reduces per size first")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "the whole run's bound: a rank that fails or hangs ends it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if o.minBytes, err = parseSize(*minB); err != nil {
		return err
	}
	if o.maxBytes, err = parseSize(*maxB); err != nil {
		return err
	}
	if o.minBytes < 4 || o.maxBytes < o.minBytes || o.iters < 1 || o.warmup < 0 {
		return fmt.Errorf("-minbytes %d, -maxbytes %d, -iters %d, -warmup %d: want 4 ≤ min ≤ max, iters ≥ 1", o.minBytes, o.maxBytes, o.iters, o.warmup)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	if o.np > 0 && getenv("RANK") == "" {
		return launch(ctx, o, args)
	}
	return rank(ctx, o, out)
}

// launch runs o.np copies of this program, one per GPU, with torchrun's
// environment.
func launch(ctx context.Context, o options, args []string) error {
	devs, err := cuda.Devices()
	if err != nil {
		return err
	}
	if o.np > len(devs) {
		return fmt.Errorf("-np %d: this host has %d GPU(s); each rank needs its own", o.np, len(devs))
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return rendezvous.Launch(ctx, o.np, append([]string{self}, args...), nil)
}

// rank is one rank of the job: it joins the communicator and runs the
// sizes; rank 0 prints the table.
func rank(ctx context.Context, o options, out io.Writer) error {
	c, err := nccl.FromEnv(ctx)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed {
			c.Abort() // a failure: the other ranks' waits end too
		}
	}()
	dctx, err := c.Device().Context()
	if err != nil {
		return err
	}
	defer dctx.Close()
	s, err := dctx.NewStream()
	if err != nil {
		return err
	}
	defer s.Close()
	maxCount := int(o.maxBytes / 4)
	send, err := cuda.Alloc[float32](s, maxCount)
	if err != nil {
		return err
	}
	defer send.Free()
	recv, err := cuda.Alloc[float32](s, maxCount)
	if err != nil {
		return err
	}
	defer recv.Free()
	n := c.Size()
	host := make([]float32, maxCount)
	for i := range host {
		host[i] = float32(c.Rank() + 1 + i%3)
	}
	if err := cuda.CopyToDevice(s, send, host); err != nil {
		return err
	}
	if c.Rank() == 0 {
		fmt.Fprintf(out, "# allreduce: %d ranks, float32 sum, %d iterations after %d warm-up\n", n, o.iters, o.warmup)
		fmt.Fprintf(out, "#%12s %13s %9s %7s %10s %8s %8s %7s\n", "size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong")
		fmt.Fprintf(out, "#%12s %13s %9s %7s %10s %8s %8s %7s\n", "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "")
	}
	wrongAll := 0
	for size := o.minBytes; size <= o.maxBytes; size *= 2 {
		count := int(size / 4)
		per, wrong, err := measure(ctx, c, s, send, recv, count, o)
		if err != nil {
			return err
		}
		wrongAll += wrong
		if c.Rank() == 0 {
			algbw := float64(count*4) / per.Seconds() / 1e9
			busbw := algbw * 2 * float64(n-1) / float64(n)
			fmt.Fprintf(out, " %12d %13d %9s %7s %10.2f %8.2f %8.2f %7d\n", count*4, count, "float", "sum",
				float64(per.Nanoseconds())/1e3, algbw, busbw, wrong)
		}
	}
	if wrongAll > 0 {
		return fmt.Errorf("rank %d: %d elements wrong", c.Rank(), wrongAll)
	}
	if c.Rank() == 0 {
		fmt.Fprintln(out, "# check: PASSED")
	}
	closed = true
	return c.Close()
}

// measure times o.iters all-reduces of the first count elements of send
// into recv, after o.warmup untimed ones, and checks the result.
func measure(ctx context.Context, c *nccl.Comm, s *cuda.Stream, send, recv cuda.Slice[float32], count int, o options) (per time.Duration, wrong int, err error) {
	sp, err := send.Slice(0, count)
	if err != nil {
		return 0, 0, err
	}
	rp, err := recv.Slice(0, count)
	if err != nil {
		return 0, 0, err
	}
	if err := cuda.Memset(s, rp, 0); err != nil { // what the check sees is this size's
		return 0, 0, err
	}
	for range o.warmup {
		if err := nccl.AllReduce(c, s, sp, rp, nccl.Sum); err != nil {
			return 0, 0, err
		}
	}
	if err := c.Sync(ctx, s); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	for range o.iters {
		if err := nccl.AllReduce(c, s, sp, rp, nccl.Sum); err != nil {
			return 0, 0, err
		}
	}
	if err := c.Sync(ctx, s); err != nil {
		return 0, 0, err
	}
	per = time.Since(start) / time.Duration(o.iters)
	wrong, err = check(s, rp, c.Size())
	return per, wrong, err
}

// check counts the elements of recv other than the sum over n ranks of
// rank+1+i%3.
func check(s *cuda.Stream, recv cuda.Slice[float32], n int) (int, error) {
	got := make([]float32, recv.Len())
	if err := cuda.CopyToHost(s, got, recv); err != nil {
		return 0, err
	}
	if err := s.Sync(context.Background()); err != nil {
		return 0, err
	}
	wrong := 0
	for i, v := range got {
		want := float32(n*(n+1)/2 + n*(i%3))
		if v != want {
			wrong++
		}
	}
	return wrong, nil
}

// parseSize reads 8, 1K, 64M or 1G (powers of 1024).
func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	case strings.HasSuffix(s, "B"):
		s = strings.TrimSuffix(s, "B")
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 {
		return 0, errors.New("bad size " + strconv.Quote(s) + ": want a positive number with an optional B, K, M or G")
	}
	return v * mult, nil
}
