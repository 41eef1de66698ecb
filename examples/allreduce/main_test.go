//go:build linux && !gpu

package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/rendezvous"
	"github.com/purecuda/purecuda/internal/testenv"
)

func TestMain(m *testing.M) { testenv.MainNCCL(m) }

// envRank marks a rank of TestAllReduceOverTwoProcesses.
const envRank = "PURECUDA_ALLREDUCE_TEST_RANK"

// Two ranks in two processes (on the simulator and the NCCL stand-in)
// run the sizes from 8 B to 64 KiB; rank 0 prints the table with no
// wrong element.
func TestAllReduceOverTwoProcesses(t *testing.T) {
	args := []string{"-minbytes", "8", "-maxbytes", "64K", "-iters", "2", "-warmup", "1"}
	if os.Getenv(envRank) == "1" {
		var out strings.Builder
		if err := run(args, &out, os.Getenv); err != nil {
			t.Fatal(err)
		}
		t.Log("\n" + out.String())
		return
	}
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), testenv.ChildTimeout)
	defer cancel()
	l := rendezvous.Launcher{NP: 2, Argv: []string{os.Args[0], "-test.run=^TestAllReduceOverTwoProcesses$", "-test.v"},
		Env: append(os.Environ(), envRank+"=1"), Stdout: &out, Stderr: &out}
	if err := l.Run(ctx); err != nil {
		t.Fatalf("the ranks: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"#wrong", "# check: PASSED", "        65536         16384     float     sum"} {
		if !strings.Contains(text, want) {
			t.Errorf("the output lacks %q:\n%s", want, text)
		}
	}
	if strings.Count(text, "float     sum") != 14 { // 8 B to 64 KiB
		t.Errorf("want 14 rows:\n%s", text)
	}
}

// -np beyond the devices is an error that says so.
func TestMoreRanksThanGPUsIsAnError(t *testing.T) {
	err := run([]string{"-np", "9"}, new(strings.Builder), func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "-np 9: this host has 4 GPU(s)") {
		t.Errorf("got %v", err)
	}
}
