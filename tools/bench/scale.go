//go:build linux

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/purecuda/purecuda/internal/scalebench"
	"github.com/purecuda/purecuda/libcuda"
)

// The scale mode runs internal/scalebench instead of the table of rows:
//
//	./bench -scale                 # N up to 100,000, M up to 1,000
//	./bench -scale -scale.max 1000 # a quicker pass
//	./bench -scale -run 'Wait'     # only the waiters
var (
	scaleMode = flag.Bool("scale", false, "run the scale benchmarks (costs per N live buffers, pending releases, waiters)")
	scaleMax  = flag.Int("scale.max", 0, "with -scale: only N and M up to this `number` (0: all)")
)

// scaleBenchtime is the iterations of each case: one drain or memory
// measurement is a whole run; frees are timed one by one; a round of
// waiters holds the streams for 20 ms.
func scaleBenchtime(name string) string {
	switch {
	case strings.HasPrefix(name, "Drain/"), strings.HasPrefix(name, "LiveMemory/"):
		return "1x"
	case strings.HasPrefix(name, "Wait/"):
		return "20x"
	default:
		return "2000x"
	}
}

// scaleMain runs the scale mode and returns the exit status.
func scaleMain() int {
	if err := runScale(); err != nil {
		fmt.Fprintln(os.Stderr, "bench -scale:", err)
		return 1
	}
	return 0
}

// runScale runs the scale benchmarks on device 0's primary context and
// prints one line per case with its metrics.
func runScale() (err error) {
	testing.Init()
	if err := libcuda.Load(); err != nil {
		return err
	}
	if err := libcuda.Init(0); err != nil {
		return fmt.Errorf("cuInit: %w", err)
	}
	lib, _ := libcuda.Loaded()
	fmt.Printf("%s\n\n", machineLine(lib.Path, lib.Version))
	var dev libcuda.Device
	if err := libcuda.DeviceGet(&dev, 0); err != nil {
		return fmt.Errorf("cuDeviceGet: %w", err)
	}
	var ctx libcuda.Context
	if err := libcuda.DevicePrimaryCtxRetain(&ctx, dev); err != nil {
		return fmt.Errorf("cuDevicePrimaryCtxRetain: %w", err)
	}
	defer func() {
		if e := libcuda.DevicePrimaryCtxRelease(dev); e != nil {
			err = errors.Join(err, fmt.Errorf("cuDevicePrimaryCtxRelease: %w", e))
		}
	}()
	match, err := regexp.Compile(*only)
	if err != nil {
		return fmt.Errorf("-run: %v", err)
	}
	z := scalebench.DefaultSizes
	if *scaleMax > 0 {
		z = z.UpTo(*scaleMax)
	}
	stop, err := startCPUProfile()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stop()) }()
	w := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "case\titerations\tns/op\tmetrics")
	p50 := map[string]float64{} // each Wait case's p50-ns, for the goals
	for _, c := range scalebench.Cases(ctx, z) {
		if !match.MatchString(c.Name) {
			continue
		}
		if err := flag.Set("test.benchtime", scaleBenchtime(c.Name)); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "running", c.Name)
		r := testing.Benchmark(c.F)
		if r.N == 0 {
			return fmt.Errorf("%s: the benchmark failed", c.Name)
		}
		units := make([]string, 0, len(r.Extra))
		for u := range r.Extra {
			units = append(units, u)
		}
		sort.Strings(units)
		var metrics []string
		for _, u := range units {
			metrics = append(metrics, fmt.Sprintf("%.4g %s", r.Extra[u], u))
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\n", c.Name, r.N, r.NsPerOp(), strings.Join(metrics, "  "))
		if v, ok := r.Extra["p50-ns"]; ok {
			p50[c.Name] = v
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return printWaitGoals(os.Stdout, z.Waiters, p50)
}

// waitGoalSlack is issue 44's allowance for the waits over their floor:
// the reference's p50 plus the goroutine wake-ups' p50.
const waitGoalSlack = 100e3 // ns

// printWaitGoals writes, for each M whose sync, reference and goroutines
// cases ran, the sync waits' p50 beside its floor (the reference's p50
// plus the Go scheduler's waking of M goroutines) and the goal, so that
// no arithmetic is left to the reader.
func printWaitGoals(out io.Writer, ms []int, p50 map[string]float64) error {
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	header := false
	for _, m := range ms {
		got, ok1 := p50[fmt.Sprintf("Wait/M=%d/sync", m)]
		ref, ok2 := p50[fmt.Sprintf("Wait/M=%d/reference", m)]
		gor, ok3 := p50[fmt.Sprintf("Wait/M=%d/goroutines", m)]
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		if !header {
			fmt.Fprint(w, "\ngoal\tp50 ns\tfloor: reference + goroutines, ns\tover the floor, ns\tgoal\tmet\t\n")
			header = true
		}
		floor := ref + gor
		fmt.Fprintf(w, "Wait/M=%d/sync p50\t%.0f\t%.0f + %.0f = %.0f\t%+.0f\t≤ %+.0f\t%s\t\n", m, got, ref, gor, floor, got-floor, waitGoalSlack, yes(got-floor <= waitGoalSlack))
	}
	return w.Flush()
}
