//go:build linux

// Command bench runs purecuda's benchmarks on a machine with a GPU next to a
// C baseline that it compiles there with cc, and prints one table:
// nanoseconds and allocations per operation for each way, what the way is
// compared with, and the ratio. The paired rows (waits, launches,
// graph.Cached.Run, Buffer.Use inside a capture, a Jacobi solver) run Go
// and C in alternate rounds in this process, C loaded through purego
// (internal/benchrows/csrc/paired.c), and give medians over the rounds and
// the median of the pairs' ratios; the other rows compare with the C
// baseline run as a separate process (csrc/baseline.c).
//
//	go build -o bench ./tools/bench   # here; CGO_ENABLED=0 works
//	./bench                           # there: needs the driver and cc
//
// Built with cgo enabled it also measures a cgo call of the same function.
package main

import (
	"bufio"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	bench "github.com/purecuda/purecuda/internal/benchrows"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/libcuda"
)

//go:embed csrc/baseline.c
var baselineC []byte

// extraRows adds rows from optional files (cgo.go).
var extraRows []func(f *bench.Fixture) []bench.Row

func main() {
	cc := flag.String("cc", "cc", "C compiler for the baseline")
	flag.Parse()
	if *scaleMode { // scale.go
		os.Exit(scaleMain())
	}
	if err := run(*cc, *benchtime); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type result struct {
	ns     float64
	allocs int64
	extra  map[string]float64 // the row's own metrics
	other  string             // a paired row's other way
}

// Like the C baseline, each Go row is run several times and the fastest
// run counts: the machine's noise only ever adds time.
var (
	only      = flag.String("run", "", "run only the rows whose \"operation/way\" matches this `regexp`")
	repeat    = flag.Int("repeat", 5, "runs of each row; the fastest counts")
	benchtime = flag.Duration("benchtime", 300*time.Millisecond, "time of one run of a row")
	cpuprof   = flag.String("cpuprofile", "", "write a CPU profile of the Go rows (with -scale: of the scale cases) to `file`")
)

func bestOf(n int, f func(b *testing.B)) (result, error) {
	best := result{ns: math.Inf(1)}
	for range n {
		br := testing.Benchmark(f)
		if br.N == 0 {
			return result{}, errors.New("the benchmark failed")
		}
		ns := float64(br.T.Nanoseconds()) / float64(br.N)
		for unit, v := range br.Extra {
			if strings.HasSuffix(unit, "-ns/op") {
				ns = v // rows that measure CPU time or a latency report it instead
			}
		}
		if ns < best.ns {
			best = result{ns: ns, allocs: br.AllocsPerOp(), extra: br.Extra}
		}
	}
	return best, nil
}

func run(cc string, benchtime time.Duration) (err error) {
	testing.Init()
	if err := flag.Set("test.benchtime", benchtime.String()); err != nil {
		return err
	}
	if err := libcuda.Load(); err != nil {
		return err
	}
	f, err := bench.Setup()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	stop, err := startCPUProfile()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stop()) }()
	rows := append(f.CallRows(), f.SyncRows()...)
	rows = append(rows, f.GraphRows()...)
	rows = append(rows, f.HostmemRows()...)
	rows = append(rows, f.StallRows()...)
	rows = append(rows, f.ProfileRows()...)
	rows = append(rows, f.QueueRows()...)
	var devices int32
	if err := libcuda.DeviceGetCount(&devices); err != nil {
		return err
	}
	if devices >= 2 {
		rows = append(rows, f.MultiGPURows()...)
	} else {
		fmt.Fprintf(os.Stderr, "the rows of two GPUs need 2 devices; %d here\n", devices)
	}
	for _, extra := range extraRows {
		rows = append(rows, extra(f)...)
	}
	lib, _ := libcuda.Loaded()
	if c, done, err := cRound(cc, lib.Path); err != nil {
		fmt.Fprintf(os.Stderr, "no rows of hostmem and C in alternate rounds: %v\n", err)
	} else {
		defer done()
		rows = append(rows, f.AlternateRows(c)...)
	}

	if c, done, err := bench.LoadC(cc, lib.Path); err != nil {
		fmt.Fprintf(os.Stderr, "no rows of Go and C in alternate rounds: %v\n", err)
	} else {
		defer done()
		rows = append(rows, f.PairedRows(c)...)
	}

	match, err := regexp.Compile(*only)
	if err != nil {
		return fmt.Errorf("-run: %v", err)
	}
	var ops, ways []string
	got := map[[2]string]result{}
	for _, r := range rows {
		if !match.MatchString(r.Op+"/"+r.Way) || (*only == "" && strings.HasPrefix(r.Op, bench.ProfilePrefix)) {
			// The rows for a profile run only when asked for.
			continue
		}
		n := *repeat
		if r.Paired {
			// A paired row runs all its rounds in one call, and its
			// figures are medians already.
			n = 1
			if err := flag.Set("test.benchtime", "1x"); err != nil {
				return err
			}
		}
		res, err := bestOf(n, r.F)
		if r.Paired {
			if err := flag.Set("test.benchtime", benchtime.String()); err != nil {
				return err
			}
		}
		if err != nil {
			return fmt.Errorf("%s / %s: %v", r.Op, r.Way, err)
		}
		res.other = r.Other
		got[[2]string{r.Op, r.Way}] = res
		fmt.Fprintf(os.Stderr, "%-44s %-24s %14.1f", r.Op, r.Way, res.ns)
		for unit, v := range res.extra {
			fmt.Fprintf(os.Stderr, "  %s=%g", unit, v)
		}
		fmt.Fprintln(os.Stderr)
		ops = appendNew(ops, r.Op)
		ways = appendNew(ways, r.Way)
	}
	cns, cops, err := baseline(cc, lib.Path)
	if err != nil {
		return err
	}
	for _, op := range cops {
		ops = appendNew(ops, op)
	}

	fmt.Printf("%s\n\n", machineLine(lib.Path, lib.Version))
	// One line per operation and way. A paired row compares its way with
	// another (C, mostly) run in alternate rounds in this process: ns/op
	// and the other's are medians over rounds, the ratio the median of the
	// pairs' ratios, and delta the median of their differences. Other rows
	// compare with the C baseline run as a separate process.
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprint(w, "operation\tway\tns/op\tallocs/op\tcompared with\tits ns/op\tratio\tdelta ns/op\t\n")
	for _, op := range ops {
		c, hasC := cns[op]
		found := false
		for _, way := range ways {
			r, ok := got[[2]string{op, way}]
			if !ok {
				continue
			}
			found = true
			switch {
			case r.other != "":
				fmt.Fprintf(w, "%s\t%s\t%.1f\t%.1f\t%s\t%.1f\t%.3fx\t%.1f\t\n", op, way, r.ns, r.extra[bench.MetricAllocs],
					r.other+" (paired)", r.extra[bench.MetricB], r.extra[bench.MetricRatio], r.extra[bench.MetricDiff])
			case hasC:
				fmt.Fprintf(w, "%s\t%s\t%.1f\t%d\tC (separate process)\t%.1f\t%.2fx\t-\t\n", op, way, r.ns, r.allocs, c, r.ns/c)
			default:
				fmt.Fprintf(w, "%s\t%s\t%.1f\t%d\t-\t-\t-\t-\t\n", op, way, r.ns, r.allocs)
			}
		}
		if !found && hasC {
			fmt.Fprintf(w, "%s\tC only\t-\t-\tC (separate process)\t%.1f\t-\t-\t\n", op, c)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return printGoals(os.Stdout, got)
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// baseline compiles baseline.c and runs it against the same driver; it
// returns the C figure of each operation and the operations in order.
func baseline(cc, libPath string) (map[string]float64, []string, error) {
	dir, err := os.MkdirTemp("", "purecuda-bench-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "baseline.c")
	ptx := filepath.Join(dir, "kernels.ptx")
	if err := os.WriteFile(src, baselineC, 0o644); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(ptx, kernels.PTX, 0o644); err != nil {
		return nil, nil, err
	}
	exe := filepath.Join(dir, "baseline")
	if out, err := exec.Command(cc, "-O2", "-pthread", "-o", exe, src, "-ldl").CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("compiling the C baseline: %v\n%s", err, out)
	}
	cmd := exec.Command(exe, libPath, ptx)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("running the C baseline: %v", err)
	}
	res := map[string]float64{}
	var ops []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		op, ns, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(ns, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("baseline output %q: %v", sc.Text(), err)
		}
		res[op] = v
		ops = append(ops, op)
	}
	return res, ops, nil
}

// startCPUProfile starts the CPU profile that -cpuprofile asks for, if it
// does; stop ends it and closes its file.
func startCPUProfile() (stop func() error, err error) {
	if *cpuprof == "" {
		return func() error { return nil }, nil
	}
	out, err := os.Create(*cpuprof)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		return nil, errors.Join(err, out.Close())
	}
	return func() error {
		pprof.StopCPUProfile()
		return out.Close()
	}, nil
}
