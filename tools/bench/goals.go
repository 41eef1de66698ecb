//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"

	bench "github.com/purecuda/purecuda/internal/benchrows"
	"github.com/purecuda/purecuda/libcuda"
)

// A goal compares one row with the floor it is measured against: another
// row of the same run (the cheapest call any Go code can make, or the
// raw generated wrapper), never a figure from another machine.
type goal struct {
	op, way   string // the row
	floorWay  string // the floor: a way of the same operation; "" for a paired row's own other way
	maxRatio  float64
	maxDeltaN float64 // ns over the floor, for a paired row's median difference
	paired    bool    // maxRatio bounds a paired row's median ratio to its own other way
}

// floorGoals are issue 44's goals, each against the floor row that stops
// any design below it.
var floorGoals = []goal{
	{op: "launch, 4 args, then a wait each 1000", way: "Function.Launch", floorWay: "call path: Go→C per call (dl.Call)", maxRatio: 1.01},
	{op: "launch, 4 args, then a wait each 1000", way: "cuda.Stream.Launch", floorWay: "call path: Go→C per call (dl.Call)", maxRatio: 1.03},
	{op: "SGEMM 64x64 (host overhead)", way: "call path: cublas.Gemm over the raw wrapper", maxDeltaN: 150},
	{op: "host function in a stream, then a wait each 100", way: "cuda.Stream.HostFuncOnDriverThread", maxRatio: 1.3, paired: true},
	{op: "host function in a stream, then a wait each 100", way: "cuda.Stream.HostFunc", maxRatio: 1.5, paired: true},
}

// printGoals writes, for each goal whose rows ran, the row, its floor and
// where it stands, so that a reader needs no arithmetic.
func printGoals(out io.Writer, got map[[2]string]result) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprint(w, "\ngoal\trow ns/op\tfloor\tfloor ns/op\tagainst the floor\tgoal\tmet\t\n")
	for _, g := range floorGoals {
		r, ok := got[[2]string{g.op, g.way}]
		if !ok {
			continue
		}
		if g.paired { // a paired row: the median of its pairs' ratios
			q := r.extra[bench.MetricRatio]
			fmt.Fprintf(w, "%s / %s\t%.1f\t%s\t%.1f\t%.3fx\t≤ %.2fx\t%s\t\n", g.op, g.way, r.ns, r.other, r.extra[bench.MetricB], q, g.maxRatio, yes(q <= g.maxRatio))
			continue
		}
		if g.floorWay == "" { // a paired row: its own median difference
			d := r.extra[bench.MetricDiff]
			fmt.Fprintf(w, "%s / %s\t%.1f\t%s\t%.1f\t%+.1f ns\t≤ %+.0f ns\t%s\t\n", g.op, g.way, r.ns, r.other, r.extra[bench.MetricB], d, g.maxDeltaN, yes(d <= g.maxDeltaN))
			continue
		}
		f, ok := got[[2]string{g.op, g.floorWay}]
		if !ok || f.ns == 0 {
			continue
		}
		ratio := r.ns / f.ns
		fmt.Fprintf(w, "%s / %s\t%.1f\t%s\t%.1f\t%.3fx\t≤ %.2fx\t%s\t\n", g.op, g.way, r.ns, g.floorWay, f.ns, ratio, g.maxRatio, yes(ratio <= g.maxRatio))
	}
	return w.Flush()
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

// machineLine says what the figures were measured on: the GPU, its
// driver, the CPU and Go, so that tables from two machines are not
// compared by mistake.
func machineLine(libPath string, version int) string {
	gpu := "unknown GPU"
	var dev libcuda.Device
	if libcuda.Init(0) == nil && libcuda.DeviceGet(&dev, 0) == nil {
		var name [256]byte
		if libcuda.DeviceGetName(&name[0], int32(len(name)), dev) == nil {
			gpu = strings.TrimRight(string(name[:]), "\x00")
		}
	}
	return fmt.Sprintf("GPU %s; driver %s (CUDA %s, %s); CPU %s, %d logical; %s %s/%s, GOMAXPROCS %d",
		gpu, driverRelease(), libcuda.FormatVersion(version), libPath, cpuModel(), runtime.NumCPU(),
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
}

// driverRelease is the kernel module's version (/proc/driver/nvidia/version),
// or "?" where that is not readable.
func driverRelease() string {
	b, err := os.ReadFile("/proc/driver/nvidia/version")
	if err != nil {
		return "?"
	}
	// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  ..."
	line, _, _ := strings.Cut(string(b), "\n")
	for _, f := range strings.Fields(line) {
		if strings.Count(f, ".") >= 1 && f[0] >= '0' && f[0] <= '9' {
			return f
		}
	}
	return "?"
}

// cpuModel is the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
