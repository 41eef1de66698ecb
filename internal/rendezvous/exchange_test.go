package rendezvous

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Every rank of worlds of 1 to 8 gets rank 0's payload, which rank 0 makes
// once.
func TestExchangeWorlds(t *testing.T) {
	for n := 1; n <= 8; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			noLeak(t)
			ctx := testCtx(t, waitLimit)
			addr := freeAddr(t, "127.0.0.1")
			want := []byte(fmt.Sprintf("payload of a world of %d", n))
			var calls atomic.Int32
			chans := make([]<-chan result, n)
			for _, cfg := range world(n, addr) {
				ch := make(chan result, 1)
				chans[cfg.Rank] = ch
				go func() {
					data, err := Exchange(ctx, cfg, func() ([]byte, error) {
						calls.Add(1)
						return want, nil
					})
					ch <- result{data, err}
				}()
			}
			for r, ch := range chans {
				res := get(t, ch, fmt.Sprintf("rank %d", r))
				if res.err != nil {
					t.Errorf("rank %d: %v", r, res.err)
				} else if !bytes.Equal(res.data, want) {
					t.Errorf("rank %d got %q, want %q", r, res.data, want)
				}
			}
			if c := calls.Load(); c != 1 {
				t.Errorf("payload was called %d times, want once (by rank 0)", c)
			}
		})
	}
}

// An empty payload and one of MaxPayload bytes both arrive whole.
func TestExchangePayloadSizes(t *testing.T) {
	for _, size := range []int{0, 1, MaxPayload} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			noLeak(t)
			ctx := testCtx(t, waitLimit)
			want := bytes.Repeat([]byte{0xA5, 0x00, 0xFF}, size/3+1)[:size]
			cfgs := world(3, freeAddr(t, "127.0.0.1"))
			chans := []<-chan result{start(ctx, cfgs[0], want), start(ctx, cfgs[1], nil), start(ctx, cfgs[2], nil)}
			for r, ch := range chans {
				res := get(t, ch, fmt.Sprintf("rank %d", r))
				if res.err != nil || !bytes.Equal(res.data, want) {
					t.Errorf("rank %d: %d bytes, %v; want %d bytes", r, len(res.data), res.err, size)
				}
			}
		})
	}
}

// Rank 0 on IPv6's loopback.
func TestExchangeIPv6(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("this host has no IPv6 loopback: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	noLeak(t)
	ctx := testCtx(t, waitLimit)
	cfgs := world(3, addr)
	var chans []<-chan result
	for _, c := range cfgs {
		chans = append(chans, start(ctx, c, []byte("v6")))
	}
	for r, ch := range chans {
		if res := get(t, ch, fmt.Sprintf("rank %d", r)); res.err != nil || string(res.data) != "v6" {
			t.Errorf("rank %d: %q, %v", r, res.data, res.err)
		}
	}
}

// Ranks that start before rank 0 listens try again until it does.
func TestExchangeRankBeforeRankZero(t *testing.T) {
	noLeak(t)
	ctx := testCtx(t, waitLimit)
	cfgs := world(3, freeAddr(t, "127.0.0.1"))
	failed := make(chan struct{}, 2)
	setHook(t, &testHookRetry, func(rank, attempt int) {
		if attempt == 1 {
			failed <- struct{}{}
		}
	})
	c1 := start(ctx, cfgs[1], nil)
	c2 := start(ctx, cfgs[2], nil)
	for range 2 {
		select {
		case <-failed:
		case <-ctx.Done():
			t.Fatalf("the ranks did not try to reach rank 0:\n%s", stacks())
		}
	}
	c0 := start(ctx, cfgs[0], []byte("late"))
	for r, ch := range []<-chan result{c0, c1, c2} {
		if res := get(t, ch, fmt.Sprintf("rank %d", r)); res.err != nil || string(res.data) != "late" {
			t.Errorf("rank %d: %q, %v", r, res.data, res.err)
		}
	}
}

// A rank whose WORLD_SIZE differs from rank 0's is refused and told both;
// the ranks of the right world go on.
func TestExchangeWorldSizeMismatch(t *testing.T) {
	noLeak(t)
	ctx := testCtx(t, waitLimit)
	addr := freeAddr(t, "127.0.0.1")
	log, logs := newLog()
	cfgs := world(3, addr)
	cfgs[0].Log = log
	c0 := start(ctx, cfgs[0], []byte("x"))
	wrong := Config{Rank: 1, WorldSize: 4, Addr: addr, Token: testToken}
	res := get(t, start(ctx, wrong, nil), "the rank of another world size")
	if !errors.Is(res.err, ErrWorldSize) || !strings.Contains(res.err.Error(), "WORLD_SIZE=3, rank 1 has 4") {
		t.Errorf("got %v, want ErrWorldSize naming both sizes", res.err)
	}
	if !strings.Contains(logs.String(), "another world size") {
		t.Errorf("rank 0 logged %q, want the refusal", logs.String())
	}
	c1, c2 := start(ctx, cfgs[1], nil), start(ctx, cfgs[2], nil)
	for r, ch := range []<-chan result{c0, c1, c2} {
		if res := get(t, ch, fmt.Sprintf("rank %d", r)); res.err != nil {
			t.Errorf("rank %d: %v", r, res.err)
		}
	}
}

// Of two processes that claim one rank, the second is refused; the world
// completes with the first.
func TestExchangeDuplicateRank(t *testing.T) {
	noLeak(t)
	ctx := testCtx(t, waitLimit)
	cfgs := world(3, freeAddr(t, "127.0.0.1"))
	c0 := start(ctx, cfgs[0], []byte("x"))
	a, b := start(ctx, cfgs[1], nil), start(ctx, cfgs[1], nil)
	// The world cannot complete without rank 2, so the first result is
	// the duplicate's refusal.
	var first <-chan result
	select {
	case res := <-a:
		first = b
		checkDuplicate(t, res)
	case res := <-b:
		first = a
		checkDuplicate(t, res)
	case <-ctx.Done():
		t.Fatalf("no rank 1 was refused as a duplicate:\n%s", stacks())
	}
	c2 := start(ctx, cfgs[2], nil)
	for r, ch := range []<-chan result{c0, first, c2} {
		if res := get(t, ch, fmt.Sprintf("rank %d", r)); res.err != nil || string(res.data) != "x" {
			t.Errorf("rank %d: %q, %v", r, res.data, res.err)
		}
	}
}

func checkDuplicate(t *testing.T, res result) {
	t.Helper()
	if !errors.Is(res.err, ErrDuplicateRank) || !strings.Contains(res.err.Error(), "rank 1") {
		t.Errorf("got %q, %v; want ErrDuplicateRank naming rank 1", res.data, res.err)
	}
}

var errGaveUp = errors.New("the test's rank 0 gave up")

// When rank 0 stops before every rank arrived, its error lists the absent
// ranks, and the waiting ranks are told which are missing.
func TestExchangeMissingRanks(t *testing.T) {
	noLeak(t)
	ctx := testCtx(t, waitLimit)
	cfgs := world(4, freeAddr(t, "127.0.0.1"))
	ctx0, cancel0 := context.WithCancelCause(ctx)
	defer cancel0(nil)
	setHook(t, &testHookArrived, func(rank int) {
		if rank == 1 {
			cancel0(errGaveUp)
		}
	})
	c0 := start(ctx0, cfgs[0], []byte("x"))
	c1 := start(ctx, cfgs[1], nil)
	res := get(t, c0, "rank 0")
	var me *MissingRanksError
	if !errors.As(res.err, &me) || !errors.Is(res.err, ErrMissingRanks) || !errors.Is(res.err, errGaveUp) {
		t.Fatalf("rank 0: %v; want a *MissingRanksError with the context's cause", res.err)
	}
	if !slices.Equal(me.Absent, []int{2, 3}) || len(me.Unacknowledged) != 0 || me.WorldSize != 4 {
		t.Errorf("rank 0: absent %v, unacknowledged %v, world %d; want [2 3], [], 4", me.Absent, me.Unacknowledged, me.WorldSize)
	}
	if !strings.Contains(res.err.Error(), "missing ranks (not there at the end): 2 3") || !strings.Contains(res.err.Error(), cfgs[0].Addr) {
		t.Errorf("rank 0's error %q does not name the missing ranks and the address", res.err)
	}
	res = get(t, c1, "rank 1")
	if !errors.Is(res.err, ErrMissingRanks) || !strings.Contains(res.err.Error(), "missing ranks: 2 3") {
		t.Errorf("rank 1: %v; want ErrMissingRanks naming ranks 2 and 3", res.err)
	}
}

// A deadline that passes with ranks missing ends rank 0's Exchange with
// context.DeadlineExceeded, the missing ranks named.
func TestExchangeMissingRanksDeadline(t *testing.T) {
	noLeak(t)
	cfgs := world(3, freeAddr(t, "127.0.0.1"))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res := get(t, start(ctx, cfgs[0], []byte("x")), "rank 0")
	var me *MissingRanksError
	if !errors.As(res.err, &me) || !errors.Is(res.err, context.DeadlineExceeded) || !slices.Equal(me.Absent, []int{1, 2}) {
		t.Errorf("got %v; want a *MissingRanksError of ranks 1 and 2 with DeadlineExceeded", res.err)
	}
}

// A rank waiting at rank 0 when rank 0's deadline passes is told that
// rank 0 gave up and which ranks are missing. (Rank 0's deadline is a
// real one here; an attempt in which rank 1 did not arrive before it is
// tried again.)
func TestExchangeMissingRanksDeadlineWaiting(t *testing.T) {
	noLeak(t)
	arrived := make(chan int, 1)
	setHook(t, &testHookArrived, func(rank int) { arrived <- rank })
	for attempt := 1; ; attempt++ {
		cfgs := world(3, freeAddr(t, "127.0.0.1"))
		ctx0, cancel0 := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel0()
		c0 := start(ctx0, cfgs[0], []byte("x"))
		c1 := start(testCtx(t, waitLimit), cfgs[1], nil)
		res0 := get(t, c0, "rank 0")
		select {
		case <-arrived:
		default:
			// Rank 1 did not arrive in time: its own result does not
			// matter, as long as it ends.
			get(t, c1, "rank 1")
			if attempt == 3 {
				t.Fatal("rank 1 did not arrive before rank 0's deadline in 3 attempts")
			}
			continue
		}
		if !errors.Is(res0.err, context.DeadlineExceeded) || !errors.Is(res0.err, ErrMissingRanks) {
			t.Errorf("rank 0: %v; want ErrMissingRanks and DeadlineExceeded", res0.err)
		}
		if res := get(t, c1, "rank 1"); !errors.Is(res.err, ErrMissingRanks) || !strings.Contains(res.err.Error(), "missing ranks: 2") {
			t.Errorf("rank 1: %v; want ErrMissingRanks naming rank 2", res.err)
		}
		return
	}
}

// A rank that reaches rank 0 but whose own deadline passes before the
// world is complete says that a rank is late or missing.
func TestExchangeLateRankClientSide(t *testing.T) {
	noLeak(t)
	ctx := testCtx(t, waitLimit)
	cfgs := world(3, freeAddr(t, "127.0.0.1"))
	ctx0, cancel0 := context.WithCancel(ctx)
	c0 := start(ctx0, cfgs[0], []byte("x"))
	ctx1, cancel1 := context.WithCancel(ctx)
	setHook(t, &testHookArrived, func(rank int) { cancel1() })
	res := get(t, start(ctx1, cfgs[1], nil), "rank 1")
	if !errors.Is(res.err, ErrMissingRanks) || !strings.Contains(res.err.Error(), "late or missing") {
		t.Errorf("rank 1: %v; want ErrMissingRanks saying a rank is late or missing", res.err)
	}
	cancel0()
	if res := get(t, c0, "rank 0"); !errors.Is(res.err, ErrMissingRanks) {
		t.Errorf("rank 0: %v; want ErrMissingRanks", res.err)
	}
}

// With no rank 0, a rank's error says that rank 0 at its address was
// unreachable until the deadline.
func TestExchangeDeadRankZero(t *testing.T) {
	noLeak(t)
	addr := freeAddr(t, "127.0.0.1")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res := get(t, start(ctx, world(2, addr)[1], nil), "rank 1")
	if !errors.Is(res.err, ErrUnreachable) || !errors.Is(res.err, context.DeadlineExceeded) ||
		!strings.Contains(res.err.Error(), "rank 0 at "+addr+" was unreachable") {
		t.Errorf("got %v; want ErrUnreachable naming %s and the deadline", res.err, addr)
	}
}

// A rank 0 that dies after its challenge (here: one that closes every
// connection after reading the hello) is unreachable too, and the error
// says that it answered once.
func TestExchangeRankZeroDiesMidway(t *testing.T) {
	noLeak(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := fakeRankZero(ln, func(c net.Conn) {
		c.Write(appendFrame(nil, msgChallenge, challenge{}.append(nil)))
		readFrame(c, maxClientFrame)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res := get(t, start(ctx, world(2, ln.Addr().String())[1], nil), "rank 1")
	if !errors.Is(res.err, ErrUnreachable) || !strings.Contains(res.err.Error(), "answered once") {
		t.Errorf("got %v; want ErrUnreachable saying rank 0 answered once", res.err)
	}
	ln.Close()
	<-served
}

// fakeRankZero serves every connection of ln with f, one at a time, and
// closes it; the channel closes when ln is closed.
func fakeRankZero(ln net.Listener, f func(net.Conn)) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(waitLimit))
			f(c)
			c.Close()
		}
	}()
	return done
}

// A rank never takes the payload of a peer that does not know the token.
func TestExchangeFakeRankZero(t *testing.T) {
	noLeak(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := fakeRankZero(ln, func(c net.Conn) {
		var ch challenge
		c.Write(appendFrame(nil, msgChallenge, ch.append(nil)))
		f, err := readFrame(c, maxClientFrame)
		if err != nil {
			return
		}
		h, _ := decodeHello(f.body)
		p := payloadMsg{mac: payloadMAC("a guess at the token, but wrong", ch.nonce, h.nonce, h.rank, []byte("evil")), data: []byte("evil")}
		c.Write(appendFrame(nil, msgPayload, p.append(nil)))
	})
	ctx := testCtx(t, waitLimit)
	res := get(t, start(ctx, world(2, ln.Addr().String())[1], nil), "rank 1")
	if !errors.Is(res.err, ErrWrongToken) || res.data != nil || !strings.Contains(res.err.Error(), "does not know the job token") {
		t.Errorf("got %q, %v; want ErrWrongToken and no payload", res.data, res.err)
	}
	ln.Close()
	<-served
}

// A rank with another token is refused and logged; the honest ranks go on.
func TestExchangeWrongToken(t *testing.T) {
	noLeak(t)
	ctx := testCtx(t, waitLimit)
	log, logs := newLog()
	cfgs := world(2, freeAddr(t, "127.0.0.1"))
	cfgs[0].Log = log
	c0 := start(ctx, cfgs[0], []byte("secret id"))
	bad := cfgs[1]
	bad.Token = strings.Repeat("z", len(testToken))
	res := get(t, start(ctx, bad, nil), "the rank with a wrong token")
	if !errors.Is(res.err, ErrWrongToken) || res.data != nil {
		t.Errorf("got %q, %v; want ErrWrongToken and no payload", res.data, res.err)
	}
	if l := logs.String(); !strings.Contains(l, "wrong job token") || !strings.Contains(l, "claimed_rank=1") {
		t.Errorf("rank 0 logged %q, want the refusal of rank 1's token", l)
	}
	if res := get(t, start(ctx, cfgs[1], nil), "rank 1"); res.err != nil || string(res.data) != "secret id" {
		t.Errorf("rank 1: %q, %v", res.data, res.err)
	}
	if res := get(t, c0, "rank 0"); res.err != nil {
		t.Errorf("rank 0: %v", res.err)
	}
}

// Rank 0 refuses a hello, proven with the token, for rank 0 or a rank
// beyond the world; Exchange refuses such a Config before any network.
func TestExchangeRankOutOfRange(t *testing.T) {
	noLeak(t)
	ctx := testCtx(t, waitLimit)
	for _, cfg := range []Config{{Rank: 4, WorldSize: 4}, {Rank: -1, WorldSize: 4}} {
		cfg.Addr, cfg.Token = "127.0.0.1:1", testToken
		if _, err := Exchange(ctx, cfg, nil); !errors.Is(err, ErrRankRange) {
			t.Errorf("Exchange(rank %d of %d): %v, want ErrRankRange", cfg.Rank, cfg.WorldSize, err)
		}
	}
	cfgs := world(2, freeAddr(t, "127.0.0.1"))
	cfgs[0].Log, _ = newLog()
	ctx0, cancel0 := context.WithCancel(ctx)
	c0 := start(ctx0, cfgs[0], []byte("x"))
	for _, rank := range []int{0, 2, 1 << 20} {
		cfg := cfgs[1]
		cfg.Rank = rank
		var err error
		for {
			_, _, err = fetchOnce(ctx, cfg)
			var r retryable
			if !errors.As(err, &r) || ctx.Err() != nil {
				break // rank 0 answered (or the test's time is up)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if !errors.Is(err, ErrRankRange) || !strings.Contains(err.Error(), fmt.Sprintf("rank %d is not one of the ranks 1 to 1", rank)) {
			t.Errorf("a hello as rank %d: %v, want ErrRankRange", rank, err)
		}
	}
	cancel0()
	get(t, c0, "rank 0")
}

// Exchange refuses what it cannot serve.
func TestExchangeBadArguments(t *testing.T) {
	ctx := testCtx(t, waitLimit)
	cfg := world(2, "127.0.0.1:29500")[0]
	if _, err := Exchange(ctx, cfg, func() ([]byte, error) { return make([]byte, MaxPayload+1), nil }); !errors.Is(err, ErrPayload) {
		t.Errorf("a payload of MaxPayload+1 bytes: %v, want ErrPayload", err)
	}
	boom := errors.New("boom")
	if _, err := Exchange(ctx, cfg, func() ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("a failing payload: %v, want its error", err)
	}
	for _, bad := range []Config{
		{Rank: 0, WorldSize: 2, Addr: "127.0.0.1:29500", Token: "short"},
		{Rank: 0, WorldSize: 2, Addr: "127.0.0.1", Token: testToken},
		{Rank: 0, WorldSize: 2, Addr: "127.0.0.1:0", Token: testToken},
		{Rank: 0, WorldSize: 0},
		{Rank: 0, WorldSize: MaxWorldSize + 1},
	} {
		if _, err := Exchange(ctx, bad, func() ([]byte, error) { return nil, nil }); err == nil {
			t.Errorf("Exchange(%+v) succeeded", bad)
		}
	}
	// World size 1 needs neither an address nor a token.
	data, err := Exchange(ctx, Config{WorldSize: 1}, func() ([]byte, error) { return []byte("alone"), nil })
	if err != nil || string(data) != "alone" {
		t.Errorf("a world of 1: %q, %v", data, err)
	}
}

// Malformed bytes and silent peers do not crash rank 0 or keep the honest
// ranks from completing, and rank 0 closes them all when it returns.
func TestExchangeMalformedPeers(t *testing.T) {
	noLeak(t)
	ctx := testCtx(t, waitLimit)
	log, logs := newLog()
	cfgs := world(3, freeAddr(t, "127.0.0.1"))
	cfgs[0].Log = log
	c0 := start(ctx, cfgs[0], []byte("x"))
	huge := appendFrame(nil, msgHello, nil)
	huge[4], huge[5], huge[6], huge[7] = 0xFF, 0xFF, 0xFF, 0xFF
	h := hello{rank: 1, worldSize: 3}
	valid := appendFrame(nil, msgHello, h.append(nil))
	v2 := slices.Clone(valid)
	v2[2] = 2
	inputs := [][]byte{
		[]byte("GET / HTTP/1.0\r\n\r\n"),
		huge,
		valid[:headerLen+5],                  // a hello cut short
		valid,                                // a hello with a wrong MAC (no challenge read)
		v2,                                   // another version
		appendFrame(nil, msgAck, nil),        // an ack before anything
		appendFrame(nil, msgPayload, nil),    // a server's message
		append(slices.Clone(valid), 1, 2, 3), // trailing bytes after a hello
		{},                                   // nothing: connects and is silent
	}
	var conns []net.Conn
	for _, in := range inputs {
		c := dial(t, ctx, cfgs[0].Addr)
		conns = append(conns, c)
		c.SetDeadline(time.Now().Add(waitLimit))
		if len(in) > 0 {
			c.Write(in)
		}
	}
	c1, c2 := start(ctx, cfgs[1], nil), start(ctx, cfgs[2], nil)
	for r, ch := range []<-chan result{c0, c1, c2} {
		if res := get(t, ch, fmt.Sprintf("rank %d", r)); res.err != nil || string(res.data) != "x" {
			t.Errorf("rank %d: %q, %v", r, res.data, res.err)
		}
	}
	// Every raw connection was closed by rank 0 (a read ends, and not by
	// the test's deadline).
	for i, c := range conns {
		var err error
		for err == nil {
			_, err = c.Read(make([]byte, 4096))
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("raw connection %d (%q) is still open after Exchange returned", i, inputs[i])
		}
		c.Close()
	}
	if l := logs.String(); !strings.Contains(l, "not a rendezvous peer") || !strings.Contains(l, "over the limit") {
		t.Errorf("rank 0's log does not report the malformed peers:\n%s", l)
	}
}

// A peer that speaks another version of the protocol is told so.
func TestExchangeVersionMismatch(t *testing.T) {
	noLeak(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := fakeRankZero(ln, func(c net.Conn) {
		f := appendFrame(nil, msgChallenge, challenge{}.append(nil))
		f[2] = 9
		c.Write(f)
	})
	ctx := testCtx(t, waitLimit)
	res := get(t, start(ctx, world(2, ln.Addr().String())[1], nil), "rank 1")
	if !errors.Is(res.err, ErrProtocol) || !strings.Contains(res.err.Error(), "version 9") {
		t.Errorf("got %v; want ErrProtocol naming version 9", res.err)
	}
	ln.Close()
	<-served

	// And rank 0 answers a hello of another version with a refusal.
	cfgs := world(2, freeAddr(t, "127.0.0.1"))
	cfgs[0].Log, _ = newLog()
	ctx0, cancel0 := context.WithCancel(ctx)
	c0 := start(ctx0, cfgs[0], []byte("x"))
	c := dial(t, ctx, cfgs[0].Addr)
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLimit))
	if _, err := readFrame(c, maxServerFrame); err != nil {
		t.Fatalf("reading the challenge: %v", err)
	}
	f := appendFrame(nil, msgHello, hello{rank: 1, worldSize: 2}.append(nil))
	f[2] = 2
	c.Write(f)
	r, err := readFrame(c, maxServerFrame)
	if err != nil || r.typ != msgRefuse {
		t.Fatalf("got %v, %v; want a refusal", r.typ, err)
	}
	ref, err := decodeRefusal(r.body)
	if err != nil || ref.code != refuseVersion || !strings.Contains(ref.text, "version 1") {
		t.Errorf("got %+v, %v; want a refusal for the version", ref, err)
	}
	cancel0()
	get(t, c0, "rank 0")
}

// dial connects to addr, again and again while nothing listens there yet,
// until ctx ends.
func dial(t *testing.T, ctx context.Context, addr string) net.Conn {
	t.Helper()
	for {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c
		}
		if ctx.Err() != nil {
			t.Fatalf("dial %s: %v", addr, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Rank 0 listens on its address only (not on the host's other addresses:
// 127.0.0.2 is loopback too), and not after Exchange returns.
func TestExchangeListensOnItsAddressOnly(t *testing.T) {
	noLeak(t)
	ctx := testCtx(t, waitLimit)
	cfgs := world(2, freeAddr(t, "127.0.0.1"))
	c0 := start(ctx, cfgs[0], []byte("x"))
	probe := dial(t, ctx, cfgs[0].Addr) // rank 0 listens
	defer probe.Close()
	_, port, _ := net.SplitHostPort(cfgs[0].Addr)
	var d net.Dialer
	if c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.2", port)); err == nil {
		c.Close()
		t.Errorf("rank 0 at %s accepted a connection at 127.0.0.2", cfgs[0].Addr)
	}
	if res := get(t, start(ctx, cfgs[1], nil), "rank 1"); res.err != nil {
		t.Fatalf("rank 1: %v", res.err)
	}
	if res := get(t, c0, "rank 0"); res.err != nil {
		t.Fatalf("rank 0: %v", res.err)
	}
	if c, err := d.DialContext(ctx, "tcp", cfgs[0].Addr); err == nil {
		c.Close()
		t.Errorf("rank 0 still listens at %s after Exchange returned", cfgs[0].Addr)
	}
}
