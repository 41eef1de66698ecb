package rendezvous

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// envLocalWorldSize is torchrun's count of the ranks of a host, which
// Launch sets for programs that read it (ConfigFromEnv does not).
const envLocalWorldSize = "LOCAL_WORLD_SIZE"

// DefaultGrace is how long Launch lets the other ranks run after one
// failed, before it kills them: they may be finishing, or failing with a
// better error of their own.
const DefaultGrace = 5 * time.Second

// Launch runs np processes of argv[0] with arguments argv[1:] on this
// host, as ranks 0 to np-1 of one job: each gets env (the calling
// process' environment when env is nil) with RANK, LOCAL_RANK,
// WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT (a free loopback port)
// and PURECUDA_JOB_TOKEN (a fresh random token) set, so ConfigFromEnv and
// Exchange work in it unchanged, and LOCAL_WORLD_SIZE (np) as torchrun
// sets it. Their output goes to this process'
// standard output and error, each line prefixed with "[rank N] ".
//
// Launch returns nil when every rank exits with status 0, else a
// *LaunchError naming each rank that failed and how. When a rank fails,
// the others are killed after DefaultGrace; when ctx ends, all are killed
// at once. Only the processes Launch started are killed, not processes
// they started themselves.
func Launch(ctx context.Context, np int, argv []string, env []string) error {
	l := Launcher{NP: np, Argv: argv, Env: env}
	return l.Run(ctx)
}

// Launcher is Launch with its settings spelled out.
type Launcher struct {
	// NP is the number of ranks, 1 to MaxWorldSize.
	NP int
	// Argv is the program and its arguments.
	Argv []string
	// Env is the ranks' environment, to which the rendezvous variables
	// are added (replacing any of the same names); nil means
	// os.Environ().
	Env []string
	// Stdout and Stderr receive the ranks' output, line by line with a
	// rank prefix; nil means os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer
	// Grace is how long the other ranks may run after one failed;
	// 0 means DefaultGrace.
	Grace time.Duration
}

// LaunchError is the error of Launch and Launcher.Run: the ranks that
// failed, in increasing order.
type LaunchError struct {
	Ranks []RankFailure
}

// RankFailure is one failed rank of a launch.
type RankFailure struct {
	Rank int
	// Err is the process' error: an *exec.ExitError for a status other
	// than 0 or a signal, or the reason it could not start.
	Err error
	// Killed says that Launch killed the rank: after another rank
	// failed, or when its context ended.
	Killed bool
	// Reason says why a killed rank was killed.
	Reason string
}

func (e *LaunchError) Error() string {
	var b strings.Builder
	b.WriteString("rendezvous: launch:")
	for i, f := range e.Ranks {
		if i > 0 {
			b.WriteByte(';')
		}
		if f.Killed {
			fmt.Fprintf(&b, " rank %d killed (%s)", f.Rank, f.Reason)
		} else {
			fmt.Fprintf(&b, " rank %d failed: %v", f.Rank, f.Err)
		}
	}
	return b.String()
}

// Unwrap gives the ranks' errors.
func (e *LaunchError) Unwrap() []error {
	errs := make([]error, 0, len(e.Ranks))
	for _, f := range e.Ranks {
		errs = append(errs, f.Err)
	}
	return errs
}

// exited is one rank's end, from its waiting goroutine.
type exited struct {
	rank int
	err  error
}

// Run starts the ranks and waits for them; see Launch.
func (l *Launcher) Run(ctx context.Context) error {
	if l.NP < 1 || l.NP > MaxWorldSize {
		return fmt.Errorf("rendezvous: launch: %d processes: the number must be 1 to %d", l.NP, MaxWorldSize)
	}
	if len(l.Argv) == 0 || l.Argv[0] == "" {
		return errors.New("rendezvous: launch: no program to run")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("rendezvous: launch: %w", context.Cause(ctx))
	}
	stdout, stderr := l.Stdout, l.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	grace := l.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("rendezvous: launch: finding a free loopback port: %w", err)
	}
	var tok [16]byte
	rand.Read(tok[:])
	base := l.Env
	if base == nil {
		base = os.Environ()
	}
	base = slices.DeleteFunc(slices.Clone(base), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case EnvRank, EnvLocalRank, EnvWorldSize, envLocalWorldSize, EnvMasterAddr, EnvMasterPort, EnvToken:
			return true
		}
		return false
	})
	base = append(base,
		EnvWorldSize+"="+strconv.Itoa(l.NP),
		envLocalWorldSize+"="+strconv.Itoa(l.NP),
		EnvMasterAddr+"=127.0.0.1",
		EnvMasterPort+"="+strconv.Itoa(port),
		EnvToken+"="+hex.EncodeToString(tok[:]),
	)

	var outMu sync.Mutex // one line at a time, whichever rank writes it
	alive := make(map[int]*exec.Cmd, l.NP)
	writers := make([]*lineWriter, 0, 2*l.NP)
	ends := make(chan exited, l.NP)
	failures := make(map[int]RankFailure)
	killAll := func(reason string) {
		for r, cmd := range alive {
			if _, ok := failures[r]; !ok && cmd.Process.Kill() == nil {
				failures[r] = RankFailure{Rank: r, Killed: true, Reason: reason}
			}
		}
	}
	for r := range l.NP {
		cmd := exec.Command(l.Argv[0], l.Argv[1:]...)
		cmd.Env = append(slices.Clip(base), EnvRank+"="+strconv.Itoa(r), EnvLocalRank+"="+strconv.Itoa(r))
		prefix := "[rank " + strconv.Itoa(r) + "] "
		ow := &lineWriter{mu: &outMu, dst: stdout, prefix: prefix}
		ew := &lineWriter{mu: &outMu, dst: stderr, prefix: prefix}
		writers = append(writers, ow, ew)
		cmd.Stdout, cmd.Stderr = ow, ew
		// A rank's own children may hold its output open after it
		// exits: stop copying a little after.
		cmd.WaitDelay = time.Second
		if err := cmd.Start(); err != nil {
			failures[r] = RankFailure{Rank: r, Err: fmt.Errorf("starting %s: %w", l.Argv[0], err)}
			killAll(fmt.Sprintf("rank %d could not start", r))
			break
		}
		alive[r] = cmd
		go func() { ends <- exited{r, cmd.Wait()} }()
	}

	var graceC <-chan time.Time
	var graceReason string
	ctxDone := ctx.Done()
	for len(alive) > 0 {
		select {
		case e := <-ends:
			delete(alive, e.rank)
			f, ok := failures[e.rank]
			switch {
			case ok && e.err == nil:
				delete(failures, e.rank) // it exited well before the kill landed
			case ok:
				f.Err = e.err
				failures[e.rank] = f
			case e.err != nil:
				failures[e.rank] = RankFailure{Rank: e.rank, Err: e.err}
				if graceC == nil && graceReason == "" {
					t := time.NewTimer(grace)
					defer t.Stop()
					graceC = t.C
					graceReason = fmt.Sprintf("still running %v after rank %d failed", grace, e.rank)
				}
			}
		case <-graceC:
			graceC = nil
			killAll(graceReason)
		case <-ctxDone:
			ctxDone = nil
			killAll("the launch's context ended: " + context.Cause(ctx).Error())
		}
	}
	for _, w := range writers {
		w.flush()
	}
	if len(failures) == 0 {
		return nil
	}
	e := &LaunchError{}
	for r := range l.NP {
		if f, ok := failures[r]; ok {
			e.Ranks = append(e.Ranks, f)
		}
	}
	return e
}

// freePort asks the system for a loopback port that nothing listens on.
// Another process may take it before rank 0 listens; rank 0's error then
// says that it cannot listen.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// lineWriter writes a rank's output to dst a whole line at a time, each
// with the rank's prefix; a last line without a newline is written by
// flush.
type lineWriter struct {
	mu     *sync.Mutex
	dst    io.Writer
	prefix string
	buf    []byte
}

// maxLine bounds a line held back waiting for its newline.
const maxLine = 64 << 10

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) >= maxLine {
				w.emit(append(w.buf, '\n'))
				w.buf = w.buf[:0]
			}
			return len(p), nil
		}
		w.emit(w.buf[:i+1])
		w.buf = w.buf[i+1:]
	}
}

func (w *lineWriter) emit(line []byte) {
	out := make([]byte, 0, len(w.prefix)+len(line))
	out = append(append(out, w.prefix...), line...)
	w.mu.Lock()
	w.dst.Write(out)
	w.mu.Unlock()
}

func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.emit(append(w.buf, '\n'))
		w.buf = nil
	}
}
