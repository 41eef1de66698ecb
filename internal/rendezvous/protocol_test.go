package rendezvous

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// FuzzDecode feeds arbitrary bytes to every decoder of the protocol: none
// may panic, allocate past its cap, or accept what it would not write back
// the same.
func FuzzDecode(f *testing.F) {
	var h hello
	h.rank, h.worldSize = 1, 4
	f.Add(appendFrame(nil, msgHello, h.append(nil)))
	f.Add(appendFrame(nil, msgChallenge, challenge{}.append(nil)))
	f.Add(appendFrame(nil, msgPayload, payloadMsg{data: []byte("id")}.append(nil)))
	f.Add(appendFrame(nil, msgAck, nil))
	f.Add(appendFrame(nil, msgRefuse, refusal{code: refuseToken, text: "no\x00\xff"}.append(nil)))
	f.Add([]byte("PR\x01\x02\xff\xff\xff\xff"))
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, limit := range []int{maxClientFrame, maxServerFrame} {
			fr, err := readFrame(bytes.NewReader(data), limit)
			if err != nil {
				if !errors.Is(err, ErrProtocol) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("readFrame: an error of another kind: %v", err)
				}
				continue
			}
			if len(fr.body) > limit {
				t.Fatalf("readFrame returned %d bytes over its cap of %d", len(fr.body), limit)
			}
			again := appendFrame(nil, fr.typ, fr.body)
			if !bytes.HasPrefix(data, again) {
				t.Fatalf("frame %+v does not encode back to its input", fr)
			}
		}
		if h, err := decodeHello(data); err == nil && !bytes.Equal(h.append(nil), data) {
			t.Fatalf("hello %+v does not encode back to its input", h)
		}
		if c, err := decodeChallenge(data); err == nil && !bytes.Equal(c.append(nil), data) {
			t.Fatalf("challenge %+v does not encode back to its input", c)
		}
		if p, err := decodePayload(data); err == nil && (!bytes.Equal(p.append(nil), data) || len(p.data) > MaxPayload) {
			t.Fatalf("payload of %d bytes does not encode back to its input", len(p.data))
		}
		if r, err := decodeRefusal(data); err == nil {
			if !utf8.ValidString(r.text) || strings.ContainsFunc(r.text, func(c rune) bool { return !unicode.IsPrint(c) }) {
				t.Fatalf("refusal text %q is not printable", r.text)
			}
			_ = r.code.err()
		}
	})
}

// A frame's length is checked against the cap before the body is read.
func TestReadFrameCap(t *testing.T) {
	hdr := appendFrame(nil, msgHello, nil)
	hdr[4], hdr[5], hdr[6], hdr[7] = 0, 0, 0, maxClientFrame+1
	// The reader has only the header: reading a body would be EOF, a
	// refusal by the cap is a protocol error.
	if _, err := readFrame(bytes.NewReader(hdr), maxClientFrame); !errors.Is(err, ErrProtocol) {
		t.Errorf("a frame of cap+1 bytes: %v, want ErrProtocol", err)
	}
	if _, err := readFrame(bytes.NewReader(hdr), maxClientFrame+1); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a frame of cap bytes with its body cut: %v, want io.ErrUnexpectedEOF", err)
	}
}

// The MACs depend on every input, and the two labels keep them apart.
func TestMACs(t *testing.T) {
	var s, c [nonceLen]byte
	base := helloMAC(testToken, s, c, 1, 2)
	s2 := s
	s2[0] = 1
	c2 := c
	c2[15] = 1
	for name, m := range map[string][macLen]byte{
		"token":        helloMAC(testToken+"x", s, c, 1, 2),
		"server nonce": helloMAC(testToken, s2, c, 1, 2),
		"client nonce": helloMAC(testToken, s, c2, 1, 2),
		"rank":         helloMAC(testToken, s, c, 2, 2),
		"world":        helloMAC(testToken, s, c, 1, 3),
		"payload":      payloadMAC(testToken, s, c, 1, []byte{0, 0, 0, 2}),
	} {
		if m == base {
			t.Errorf("another %s gives the same MAC", name)
		}
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text":    "plain text",
		"é ü":           "é ü",
		"a\x00b\nc\x1b": `a\x00b\nc\x1b`,
		"\xff\xfe":      `\xff\xfe`,
		"\u202e":        `\u202e`,
	} {
		if got := printable([]byte(in)); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzServe gives rank 0's handling of a connection arbitrary bytes from
// the client: it must end (at the end of the bytes) without a panic, and
// register no rank (no MAC can be right without the challenge's nonce).
func FuzzServe(f *testing.F) {
	var h hello
	h.rank, h.worldSize = 1, 3
	f.Add(appendFrame(nil, msgHello, h.append(nil)))
	f.Add(append(appendFrame(nil, msgHello, h.append(nil)), appendFrame(nil, msgAck, nil)...))
	f.Add(appendFrame(nil, msgAck, nil))
	f.Add([]byte("PR\x02\x02\x00\x00\x00\x38"))
	f.Add([]byte("PR\x01\x02\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newServer(Config{WorldSize: 3, Addr: "fuzz", Token: testToken, Log: quiet}, []byte("x"), time.Now().Add(waitLimit))
		c := &scriptConn{r: bytes.NewReader(data)}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.handle(c)
		if len(s.arrived) != 0 || len(s.acked) != 0 || len(s.conns) != 0 || !c.closed {
			t.Fatalf("after the connection: arrived %v, acked %v, %d connections, closed %v", s.arrived, s.acked, len(s.conns), c.closed)
		}
	})
}

// scriptConn is a connection that reads a script and discards what is
// written to it.
type scriptConn struct {
	r      *bytes.Reader
	closed bool
}

func (c *scriptConn) Read(p []byte) (int, error)         { return c.r.Read(p) }
func (c *scriptConn) Write(p []byte) (int, error)        { return len(p), nil }
func (c *scriptConn) Close() error                       { c.closed = true; return nil }
func (c *scriptConn) LocalAddr() net.Addr                { return &net.TCPAddr{} }
func (c *scriptConn) RemoteAddr() net.Addr               { return &net.TCPAddr{} }
func (c *scriptConn) SetDeadline(t time.Time) error      { return nil }
func (c *scriptConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *scriptConn) SetWriteDeadline(t time.Time) error { return nil }
