package testenv

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv/harness"
)

// EnvChild names, in a child process that InChild started, the test that
// the child is to run. Main checks for leaks in no child (see
// harness.EnvChild): the child ends with what its test left.
const EnvChild = harness.EnvChild

// ChildTimeout bounds a child process of InChild and RunChild.
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
	child, out, err := RunChild(t)
	if child {
		return true
	}
	t.Logf("child process for %s:\n%s", t.Name(), out)
	switch {
	case err != nil:
		t.Fatalf("the child process failed: %v", err)
	case !strings.Contains(out, "--- PASS: "+t.Name()):
		t.Fatalf("the child process did not run %s", t.Name())
	}
	return false
}

// RunChild is InChild for a test whose child is meant to fail or to die
// (a failed test, a fatal error of the runtime): the parent judges the
// child's output and its error (an *exec.ExitError for a child that
// exited with a status other than 0) itself. It returns child true in the
// child, where the test's body runs; in the parent it fails the test when
// the child runs past ChildTimeout.
func RunChild(t *testing.T) (child bool, out string, err error) {
	t.Helper()
	if os.Getenv(EnvChild) == t.Name() {
		return true, "", nil
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
	b, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the child process for %s ran past %v:\n%s", t.Name(), ChildTimeout, b)
	}
	return false, string(b), err
}
