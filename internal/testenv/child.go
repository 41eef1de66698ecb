package testenv

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// EnvChild names, in a child process that InChild started, the test that
// the child is to run.
const EnvChild = "PURECUDA_TEST_CHILD"

// ChildTimeout bounds a child process of InChild.
const ChildTimeout = 6 * Timeout

// InChild runs the calling test in a child process of the test binary
// (os.Args[0] with -test.run naming only this test) and reports whether
// the caller is that child: the test's body runs when InChild returns
// true, and the parent returns at once when it returns false,
//
//	if !testenv.InChild(t) {
//		return
//	}
//
// A kernel fault loses the device for the whole process (DESIGN.md,
// driver facts; the simulator does the same): a test that faults runs in a
// child so that the tests after it keep a working device. The parent
// fails when the child fails or runs past ChildTimeout, and logs the
// child's output either way.
func InChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv(EnvChild) == t.Name() {
		return true
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	ctx, cancel := context.WithTimeout(context.Background(), ChildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), EnvChild+"="+t.Name())
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("child process for %s:\n%s", t.Name(), out)
	switch {
	case ctx.Err() != nil:
		t.Fatalf("the child process ran past %v", ChildTimeout)
	case err != nil:
		t.Fatalf("the child process failed: %v", err)
	case !strings.Contains(string(out), "--- PASS: "+t.Name()):
		t.Fatalf("the child process did not run %s", t.Name())
	}
	return false
}
