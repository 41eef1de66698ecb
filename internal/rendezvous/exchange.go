package rendezvous

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"
)

// Timeouts of Exchange.
const (
	// DefaultTimeout bounds an Exchange whose context has no deadline.
	DefaultTimeout = 5 * time.Minute
	// handshakeTimeout bounds the time from a connection's accept to its
	// hello, so that a peer that connects and says nothing is dropped
	// (while honest ranks, served by their own goroutines, go on).
	handshakeTimeout = 10 * time.Second
	// writeTimeout bounds one write, so that a peer that does not read
	// cannot hold rank 0.
	writeTimeout = 10 * time.Second
	// refuseTimeout bounds the writing of a refusal after rank 0 has
	// given up, when its context's deadline has already passed.
	refuseTimeout = time.Second
	// maxExtraConns is how many connections rank 0 holds beyond one per
	// rank (connections that have not said hello yet, refused ones
	// being answered); more are closed at once.
	maxExtraConns = 64
)

// Exchange gives every rank of a job the bytes that rank 0 makes: rank 0
// calls payload (once; its result is at most MaxPayload bytes) and serves
// the result over TCP at cfg.Addr to ranks 1 to WorldSize-1, and returns
// it once every one of them has received it; another rank connects to
// cfg.Addr (again and again until its context's deadline while rank 0 is
// not listening yet) and returns what rank 0 serves. With WorldSize 1 it
// returns payload()'s result and uses no network.
//
// Rank 0 sends the payload only once every rank has arrived, so a rank
// that returns without error knows that the whole world was there: a
// missing rank fails the exchange for everyone, rather than a later
// collective hanging. Every wait is bounded by ctx (by DefaultTimeout
// when ctx has no deadline). Errors match ErrWrongToken, ErrWorldSize,
// ErrDuplicateRank, ErrRankRange, ErrMissingRanks (rank 0's is a
// *MissingRanksError naming the ranks), ErrUnreachable, ErrProtocol or
// ErrPayload, and name the ranks and the address.
//
// Rank 0 listens on cfg.Addr only, and closes its listener and every
// connection before it returns; Exchange leaves no goroutine behind. It
// logs refused connections (a wrong token, malformed bytes) to cfg.Log.
func Exchange(ctx context.Context, cfg Config, payload func() ([]byte, error)) ([]byte, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok && cfg.WorldSize > 1 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	if cfg.Rank != 0 {
		return fetch(ctx, cfg)
	}
	p, err := payload()
	if err != nil {
		return nil, fmt.Errorf("rendezvous: rank 0's payload: %w", err)
	}
	if len(p) > MaxPayload {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrPayload, len(p), MaxPayload)
	}
	if cfg.WorldSize == 1 {
		return p, nil
	}
	return serve(ctx, cfg, p)
}

// Hooks for the tests, set before an Exchange starts: a rank arrived at
// rank 0; an attempt of a rank to reach rank 0 failed.
var (
	testHookArrived func(rank int)
	testHookRetry   func(rank, attempt int)
)

// server is rank 0's state for one Exchange. Each connection is served by
// its own goroutine (handle); the registry of ranks is under mu.
type server struct {
	cfg     Config
	payload []byte
	log     *slog.Logger
	// deadline is the context's: the bound of every read.
	deadline time.Time
	wg       sync.WaitGroup

	mu       sync.Mutex
	conns    map[net.Conn]struct{} // open connections
	closed   bool                  // no more connections are taken
	arrived  map[int]bool          // ranks that said hello and hold their connection
	acked    map[int]bool          // ranks that have the payload
	complete chan struct{}         // closed once every rank arrived (the barrier)
	allAcked chan struct{}         // closed once every rank has the payload
	done     chan struct{}         // closed when Exchange stops serving
	busyLog  bool                  // a "too many connections" was logged
}

func serve(ctx context.Context, cfg Config, payload []byte) ([]byte, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("rendezvous: rank 0 cannot listen at %s (MASTER_ADDR must be an address of rank 0's host; is another job or another rank 0 on that port?): %w", cfg.Addr, err)
	}
	deadline, _ := ctx.Deadline()
	s := newServer(cfg, payload, deadline)
	s.wg.Add(1)
	go s.accept(ln)

	var result error
	select {
	case <-s.allAcked:
	case <-ctx.Done():
		select {
		case <-s.allAcked:
		default:
			result = s.missing(s.cfg.Addr, context.Cause(ctx))
		}
	}
	// Stop: no new connections; the handlers waiting for the barrier
	// send their refusal; those in a read return at once.
	ln.Close()
	s.mu.Lock()
	s.closed = true
	close(s.done)
	for c := range s.conns {
		c.SetReadDeadline(time.Unix(1, 0))
	}
	s.mu.Unlock()
	s.wg.Wait()
	if result != nil {
		return nil, result
	}
	return payload, nil
}

func newServer(cfg Config, payload []byte, deadline time.Time) *server {
	return &server{
		cfg: cfg, payload: payload, log: cfg.logger(), deadline: deadline,
		conns:    make(map[net.Conn]struct{}),
		arrived:  make(map[int]bool),
		acked:    make(map[int]bool),
		complete: make(chan struct{}),
		allAcked: make(chan struct{}),
		done:     make(chan struct{}),
	}
}

func (s *server) missing(addr string, cause error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := &MissingRanksError{Addr: addr, WorldSize: s.cfg.WorldSize, Cause: cause}
	complete := false
	select {
	case <-s.complete:
		complete = true
	default:
	}
	for r := 1; r < s.cfg.WorldSize; r++ {
		switch {
		case s.acked[r]:
		case !s.arrived[r]:
			e.Absent = append(e.Absent, r)
		case complete:
			// It was sent the payload, or was about to be.
			e.Unacknowledged = append(e.Unacknowledged, r)
		}
	}
	return e
}

func (s *server) accept(ln net.Listener) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors, a connection reset before its
			// accept: try again shortly, as net/http does.
			t := time.NewTimer(10 * time.Millisecond)
			select {
			case <-t.C:
			case <-s.done:
				t.Stop()
				return
			}
			continue
		}
		if !s.track(c) {
			c.Close()
			continue
		}
		s.wg.Add(1)
		go s.handle(c)
	}
}

// track adds a connection to the open ones, unless Exchange is stopping or
// there are too many.
func (s *server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if len(s.conns) >= s.cfg.WorldSize-1+maxExtraConns {
		if !s.busyLog {
			s.busyLog = true
			s.log.Warn("rendezvous: rank 0 refuses connections beyond its limit", "addr", s.cfg.Addr, "limit", len(s.conns), "remote", c.RemoteAddr().String())
		}
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

// arrive registers a rank that said hello; false if another connection
// holds it.
func (s *server) arrive(rank int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.arrived[rank] || s.acked[rank] {
		return false
	}
	s.arrived[rank] = true
	if len(s.arrived)+len(s.acked) == s.cfg.WorldSize-1 {
		select {
		case <-s.complete:
		default:
			close(s.complete)
		}
	}
	return true
}

// leave unregisters a rank whose connection ended before it had the
// payload: it may arrive again.
func (s *server) leave(rank int) {
	s.mu.Lock()
	delete(s.arrived, rank)
	s.mu.Unlock()
}

func (s *server) ack(rank int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.arrived, rank)
	s.acked[rank] = true
	if len(s.acked) == s.cfg.WorldSize-1 {
		close(s.allAcked)
	}
}

// handle serves one connection, from the challenge to the ack.
func (s *server) handle(c net.Conn) {
	defer s.wg.Done()
	defer s.untrack(c)
	remote := c.RemoteAddr().String()

	c.SetDeadline(earliest(s.deadline, time.Now().Add(handshakeTimeout)))
	var ch challenge
	rand.Read(ch.nonce[:])
	if _, err := c.Write(appendFrame(nil, msgChallenge, ch.append(nil))); err != nil {
		return
	}
	f, err := readFrame(c, maxClientFrame)
	var ve *versionError
	switch {
	case errors.As(err, &ve):
		s.log.Warn("rendezvous: rank 0 refused a client of another protocol version", "addr", s.cfg.Addr, "remote", remote, "version", ve.version)
		s.refuse(c, refuseVersion, fmt.Sprintf("rank 0 speaks rendezvous protocol version %d, this rank %d", protoVersion, ve.version))
		return
	case err != nil:
		if !errors.Is(err, io.EOF) && !s.stopping() && time.Now().Before(s.deadline) {
			s.log.Warn("rendezvous: rank 0 dropped a connection that sent no hello", "addr", s.cfg.Addr, "remote", remote, "err", err)
			if errors.Is(err, ErrProtocol) {
				s.refuse(c, refuseProtocol, err.Error())
			}
		}
		return
	}
	if f.typ != msgHello {
		s.log.Warn("rendezvous: rank 0 refused a client that sent no hello", "addr", s.cfg.Addr, "remote", remote, "sent", f.typ.String())
		s.refuse(c, refuseProtocol, fmt.Sprintf("expected a hello, got a %v", f.typ))
		return
	}
	h, err := decodeHello(f.body)
	if err != nil {
		s.log.Warn("rendezvous: rank 0 refused a malformed hello", "addr", s.cfg.Addr, "remote", remote, "err", err)
		s.refuse(c, refuseProtocol, err.Error())
		return
	}
	want := helloMAC(s.cfg.Token, ch.nonce, h.nonce, h.rank, h.worldSize)
	if !hmac.Equal(want[:], h.mac[:]) {
		s.log.Warn("rendezvous: rank 0 refused a client with a wrong job token", "addr", s.cfg.Addr, "remote", remote, "claimed_rank", h.rank)
		s.refuse(c, refuseToken, "the job token (PURECUDA_JOB_TOKEN) differs from rank 0's")
		return
	}
	if int64(h.worldSize) != int64(s.cfg.WorldSize) {
		s.log.Warn("rendezvous: rank 0 refused a rank of another world size", "addr", s.cfg.Addr, "remote", remote, "rank", h.rank, "world_size", h.worldSize, "want", s.cfg.WorldSize)
		s.refuse(c, refuseWorldSize, fmt.Sprintf("rank 0 has WORLD_SIZE=%d, rank %d has %d", s.cfg.WorldSize, h.rank, h.worldSize))
		return
	}
	if h.rank == 0 || int64(h.rank) >= int64(s.cfg.WorldSize) {
		s.log.Warn("rendezvous: rank 0 refused a rank out of range", "addr", s.cfg.Addr, "remote", remote, "rank", h.rank)
		s.refuse(c, refuseRange, fmt.Sprintf("rank %d is not one of the ranks 1 to %d that fetch from rank 0", h.rank, s.cfg.WorldSize-1))
		return
	}
	rank := int(h.rank)
	if !s.arrive(rank) {
		s.log.Warn("rendezvous: rank 0 refused a duplicate rank", "addr", s.cfg.Addr, "remote", remote, "rank", rank)
		s.refuse(c, refuseDuplicate, fmt.Sprintf("another process already arrived as rank %d", rank))
		return
	}
	if testHookArrived != nil {
		testHookArrived(rank)
	}
	acked := false
	defer func() {
		if !acked {
			s.leave(rank)
		}
	}()

	// Wait for the barrier while a reader watches the connection: a
	// client says nothing until it has the payload, so whatever the
	// reader gets first (an end, bytes) before then means the rank left.
	// Exchange's stop ends the read when the context ends; the read's own
	// deadline, a little later, is only a backstop, so that a waiting
	// rank hears why rank 0 gave up rather than a bare close.
	c.SetDeadline(time.Time{})
	c.SetReadDeadline(s.deadline.Add(refuseTimeout))
	reply := make(chan error, 1)
	go func() {
		f, err := readFrame(c, maxClientFrame)
		if err == nil && (f.typ != msgAck || len(f.body) != 0) {
			err = fmt.Errorf("%w: expected an empty ack, got a %v of %d bytes", ErrProtocol, f.typ, len(f.body))
		}
		reply <- err
	}()
	defer func() {
		if reply != nil {
			c.SetReadDeadline(time.Unix(1, 0))
			<-reply
		}
	}()
	select {
	case err := <-reply:
		reply = nil
		if s.stopping() {
			// The read ended because Exchange is stopping (both
			// channels were ready): the rank is still there.
			s.refuseGaveUp(c)
		} else {
			s.log.Warn("rendezvous: a rank left before every rank arrived", "addr", s.cfg.Addr, "remote", remote, "rank", rank, "err", err)
		}
		return
	case <-s.done:
		s.refuseGaveUp(c)
		return
	case <-s.complete:
	}
	p := payloadMsg{mac: payloadMAC(s.cfg.Token, ch.nonce, h.nonce, h.rank, s.payload), data: s.payload}
	c.SetWriteDeadline(earliest(s.deadline, time.Now().Add(writeTimeout)))
	if _, err := c.Write(appendFrame(nil, msgPayload, p.append(nil))); err != nil {
		if !s.stopping() {
			s.log.Warn("rendezvous: rank 0 could not send the payload", "addr", s.cfg.Addr, "remote", remote, "rank", rank, "err", err)
		}
		return
	}
	select {
	case err := <-reply:
		reply = nil
		if err != nil {
			if !s.stopping() {
				s.log.Warn("rendezvous: a rank did not acknowledge the payload", "addr", s.cfg.Addr, "remote", remote, "rank", rank, "err", err)
			}
			return
		}
		acked = true
		s.ack(rank)
	case <-s.done:
	}
}

func (s *server) stopping() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// refuse tells a client why it is refused; best effort, under the
// connection's deadline.
func (s *server) refuse(c net.Conn, code refuseCode, text string) {
	c.SetWriteDeadline(time.Now().Add(refuseTimeout))
	c.Write(appendFrame(nil, msgRefuse, refusal{code: code, text: text}.append(nil)))
}

// refuseGaveUp tells a waiting rank that rank 0 stopped before the world
// was complete, naming the missing ranks.
func (s *server) refuseGaveUp(c net.Conn) {
	s.mu.Lock()
	var absent []int
	for r := 1; r < s.cfg.WorldSize; r++ {
		if !s.arrived[r] && !s.acked[r] {
			absent = append(absent, r)
		}
	}
	s.mu.Unlock()
	text := "rank 0 stopped before every rank arrived"
	if len(absent) > 0 {
		text += "; missing ranks: " + rankList(absent)
	}
	s.refuse(c, refuseGaveUp, text)
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// fetch is Exchange for a rank other than 0: it tries until the payload
// comes, rank 0 refuses it, or the context ends.
func fetch(ctx context.Context, cfg Config) ([]byte, error) {
	var last error
	wait := 10 * time.Millisecond
	greetedOnce := false
	for attempt := 1; ; attempt++ {
		data, greeted, err := fetchOnce(ctx, cfg)
		if err == nil {
			return data, nil
		}
		var r retryable
		if !errors.As(err, &r) {
			return nil, err
		}
		greetedOnce = greetedOnce || greeted
		last = r.err
		if testHookRetry != nil {
			testHookRetry(cfg.Rank, attempt)
		}
		if ctx.Err() == nil {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			wait = min(2*wait, 500*time.Millisecond)
		}
		if ctx.Err() == nil {
			continue
		}
		cause := context.Cause(ctx)
		var ne net.Error
		if greeted && errors.As(last, &ne) && ne.Timeout() {
			return nil, fmt.Errorf("%w: rank %d: rank 0 at %s did not send the payload before this rank's context ended (%w): it sends it once every one of the %d ranks has arrived, so a rank is late or missing", ErrMissingRanks, cfg.Rank, cfg.Addr, cause, cfg.WorldSize)
		}
		was := ""
		if greetedOnce {
			was = " (it answered once, then the connection was lost)"
		}
		return nil, fmt.Errorf("%w: rank %d: rank 0 at %s was unreachable until this rank's context ended (%w)%s; %d attempts, the last: %v", ErrUnreachable, cfg.Rank, cfg.Addr, cause, was, attempt, last)
	}
}

// retryable wraps a failure of one attempt after which fetch tries again:
// no rank 0 listening yet, or a connection that ended without a refusal.
type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }

// fetchOnce makes one connection to rank 0. greeted says that rank 0
// sent its challenge and got the hello: a later timeout was a wait for
// the payload.
func fetchOnce(ctx context.Context, cfg Config) (data []byte, greeted bool, err error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, false, retryable{err}
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	who := "rank " + strconv.Itoa(cfg.Rank)
	f, err := readFrame(c, 1+maxRefuseText)
	var ve *versionError
	switch {
	case errors.As(err, &ve):
		return nil, false, fmt.Errorf("%w: %s: rank 0 at %s speaks rendezvous protocol version %d, this rank %d", ErrProtocol, who, cfg.Addr, ve.version, protoVersion)
	case errors.Is(err, ErrProtocol):
		return nil, false, fmt.Errorf("%s: what listens at rank 0's address %s: %w", who, cfg.Addr, err)
	case err != nil:
		return nil, false, retryable{err}
	}
	if f.typ == msgRefuse {
		return nil, false, refused(cfg, f.body)
	}
	if f.typ != msgChallenge {
		return nil, false, fmt.Errorf("%w: %s: rank 0 at %s sent a %v, not a challenge", ErrProtocol, who, cfg.Addr, f.typ)
	}
	ch, err := decodeChallenge(f.body)
	if err != nil {
		return nil, false, fmt.Errorf("%s: rank 0 at %s: %w", who, cfg.Addr, err)
	}
	h := hello{rank: uint32(cfg.Rank), worldSize: uint32(cfg.WorldSize)}
	rand.Read(h.nonce[:])
	h.mac = helloMAC(cfg.Token, ch.nonce, h.nonce, h.rank, h.worldSize)
	if _, err := c.Write(appendFrame(nil, msgHello, h.append(nil))); err != nil {
		return nil, false, retryable{err}
	}
	f, err = readFrame(c, maxServerFrame)
	if err != nil {
		if errors.Is(err, ErrProtocol) {
			return nil, true, fmt.Errorf("%s: rank 0 at %s: %w", who, cfg.Addr, err)
		}
		return nil, true, retryable{err}
	}
	switch {
	case f.typ == msgRefuse:
		return nil, true, refused(cfg, f.body)
	case f.typ != msgPayload:
		return nil, true, fmt.Errorf("%w: %s: rank 0 at %s sent a %v, not the payload", ErrProtocol, who, cfg.Addr, f.typ)
	}
	p, err := decodePayload(f.body)
	if err != nil {
		return nil, true, fmt.Errorf("%s: rank 0 at %s: %w", who, cfg.Addr, err)
	}
	want := payloadMAC(cfg.Token, ch.nonce, h.nonce, h.rank, p.data)
	if !hmac.Equal(want[:], p.mac[:]) {
		return nil, true, fmt.Errorf("%w: %s: the peer at rank 0's address %s does not know the job token (PURECUDA_JOB_TOKEN): its payload is refused", ErrWrongToken, who, cfg.Addr)
	}
	if _, err := c.Write(appendFrame(nil, msgAck, nil)); err != nil {
		// The payload is here and proven; rank 0 will report this rank
		// as unacknowledged if the ack is lost.
		return p.data, true, nil
	}
	return p.data, true, nil
}

func refused(cfg Config, body []byte) error {
	r, err := decodeRefusal(body)
	if err != nil {
		return fmt.Errorf("rank %d: rank 0 at %s: %w", cfg.Rank, cfg.Addr, err)
	}
	return fmt.Errorf("%w: rank 0 at %s refused rank %d: %s", r.code.err(), cfg.Addr, cfg.Rank, r.text)
}
