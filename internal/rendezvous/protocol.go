package rendezvous

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// The wire protocol, version 1. Every message is a frame: an 8-byte
// header — the magic "PR", the protocol version, the message type, the
// body's length as a big-endian uint32 — and the body. A reader refuses a
// length above the cap of what it expects before it reads (or allocates)
// anything more.
//
// A fetch is one connection:
//
//	rank 0 → rank r   challenge  16-byte nonce of rank 0
//	rank r → rank 0   hello      rank, world size (uint32 each), 16-byte
//	                             nonce of rank r, HMAC-SHA256 under the
//	                             token of both nonces, rank and world size
//	rank 0 → rank r   payload    HMAC-SHA256 under the token of both
//	                             nonces, the rank and the payload; the
//	                             payload
//	rank r → rank 0   ack        (empty)
//
// or, instead of the payload, rank 0 sends refuse: a code and a short text.
// Rank 0 sends the payload only once every rank has said hello (the
// barrier), so a rank that has the payload knows that the whole world
// arrived. The token itself never crosses the network, a recorded hello
// or payload is of no use in another connection, and a rank takes the
// payload only from a rank 0 that knows the token.

// MaxPayload is the largest payload Exchange serves, in bytes.
const MaxPayload = 64 << 10

const (
	protoVersion = 1
	headerLen    = 8
	nonceLen     = 16
	macLen       = sha256.Size

	helloLen      = 4 + 4 + nonceLen + macLen
	maxRefuseText = 1024
	// maxClientFrame caps what rank 0 reads from a client: a hello.
	maxClientFrame = helloLen
	// maxServerFrame caps what a client reads from rank 0: a payload.
	maxServerFrame = macLen + MaxPayload
)

var magic = [2]byte{'P', 'R'}

type msgType byte

const (
	msgChallenge msgType = 1
	msgHello     msgType = 2
	msgPayload   msgType = 3
	msgAck       msgType = 4
	msgRefuse    msgType = 5
)

func (t msgType) String() string {
	switch t {
	case msgChallenge:
		return "challenge"
	case msgHello:
		return "hello"
	case msgPayload:
		return "payload"
	case msgAck:
		return "ack"
	case msgRefuse:
		return "refuse"
	}
	return "message type " + strconv.Itoa(int(t))
}

// refuseCode says why rank 0 refused a client.
type refuseCode byte

const (
	refuseToken     refuseCode = 1 // the hello's MAC is not the token's
	refuseWorldSize refuseCode = 2 // the client's world size is not rank 0's
	refuseDuplicate refuseCode = 3 // another connection holds the rank
	refuseRange     refuseCode = 4 // the rank is 0 or not below the world size
	refuseVersion   refuseCode = 5 // the client speaks another version
	refuseProtocol  refuseCode = 6 // a malformed or unexpected message
	refuseGaveUp    refuseCode = 7 // rank 0's deadline passed before the world was complete
)

// errFor maps a refusal to the error a client returns.
func (c refuseCode) err() error {
	switch c {
	case refuseToken:
		return ErrWrongToken
	case refuseWorldSize:
		return ErrWorldSize
	case refuseDuplicate:
		return ErrDuplicateRank
	case refuseRange:
		return ErrRankRange
	case refuseGaveUp:
		return ErrMissingRanks
	}
	return ErrProtocol
}

// frame is one message as read (always of protoVersion).
type frame struct {
	typ  msgType
	body []byte
}

// versionError is readFrame's error for a frame of another version: its
// body is not read, since its cap is not known.
type versionError struct{ version byte }

func (e *versionError) Error() string {
	return fmt.Sprintf("rendezvous protocol version %d, not %d", e.version, protoVersion)
}

func (e *versionError) Unwrap() error { return ErrProtocol }

// appendFrame appends a frame of the current version to dst.
func appendFrame(dst []byte, typ msgType, body []byte) []byte {
	dst = append(dst, magic[0], magic[1], protoVersion, byte(typ))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	return append(dst, body...)
}

// readFrame reads one frame whose body is at most limit bytes. A frame of
// another version is a *versionError (which matches ErrProtocol), for the
// caller to answer.
func readFrame(r io.Reader, limit int) (frame, error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return frame{}, err
	}
	f, n, err := decodeHeader(h[:], limit)
	if err != nil {
		return frame{}, err
	}
	f.body = make([]byte, n)
	if _, err := io.ReadFull(r, f.body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return frame{}, err
	}
	return f, nil
}

// decodeHeader checks a frame's header and returns its body's length.
func decodeHeader(h []byte, limit int) (frame, int, error) {
	if len(h) < headerLen {
		return frame{}, 0, fmt.Errorf("%w: a frame header of %d bytes", ErrProtocol, len(h))
	}
	if h[0] != magic[0] || h[1] != magic[1] {
		return frame{}, 0, fmt.Errorf("%w: not a rendezvous peer (the first bytes are %q)", ErrProtocol, h[:2])
	}
	if h[2] != protoVersion {
		return frame{}, 0, &versionError{h[2]}
	}
	n := binary.BigEndian.Uint32(h[4:8])
	if uint64(n) > uint64(limit) {
		return frame{}, 0, fmt.Errorf("%w: a %v of %d bytes is over the limit of %d", ErrProtocol, msgType(h[3]), n, limit)
	}
	return frame{typ: msgType(h[3])}, int(n), nil
}

type challenge struct {
	nonce [nonceLen]byte
}

func (c challenge) append(dst []byte) []byte { return append(dst, c.nonce[:]...) }

func decodeChallenge(b []byte) (challenge, error) {
	var c challenge
	if len(b) != nonceLen {
		return c, fmt.Errorf("%w: a challenge of %d bytes, not %d", ErrProtocol, len(b), nonceLen)
	}
	copy(c.nonce[:], b)
	return c, nil
}

type hello struct {
	rank, worldSize uint32
	nonce           [nonceLen]byte
	mac             [macLen]byte
}

func (h hello) append(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, h.rank)
	dst = binary.BigEndian.AppendUint32(dst, h.worldSize)
	dst = append(dst, h.nonce[:]...)
	return append(dst, h.mac[:]...)
}

func decodeHello(b []byte) (hello, error) {
	var h hello
	if len(b) != helloLen {
		return h, fmt.Errorf("%w: a hello of %d bytes, not %d", ErrProtocol, len(b), helloLen)
	}
	h.rank = binary.BigEndian.Uint32(b[0:4])
	h.worldSize = binary.BigEndian.Uint32(b[4:8])
	copy(h.nonce[:], b[8:8+nonceLen])
	copy(h.mac[:], b[8+nonceLen:])
	return h, nil
}

type payloadMsg struct {
	mac  [macLen]byte
	data []byte
}

func (p payloadMsg) append(dst []byte) []byte {
	dst = append(dst, p.mac[:]...)
	return append(dst, p.data...)
}

func decodePayload(b []byte) (payloadMsg, error) {
	var p payloadMsg
	if len(b) < macLen || len(b) > macLen+MaxPayload {
		return p, fmt.Errorf("%w: a payload message of %d bytes (%d to %d)", ErrProtocol, len(b), macLen, macLen+MaxPayload)
	}
	copy(p.mac[:], b)
	p.data = b[macLen:]
	return p, nil
}

type refusal struct {
	code refuseCode
	text string
}

func (r refusal) append(dst []byte) []byte {
	t := r.text
	if len(t) > maxRefuseText {
		t = t[:maxRefuseText]
	}
	dst = append(dst, byte(r.code))
	return append(dst, t...)
}

func decodeRefusal(b []byte) (refusal, error) {
	if len(b) < 1 || len(b) > 1+maxRefuseText {
		return refusal{}, fmt.Errorf("%w: a refusal of %d bytes (1 to %d)", ErrProtocol, len(b), 1+maxRefuseText)
	}
	return refusal{code: refuseCode(b[0]), text: printable(b[1:])}, nil
}

// printable makes text from a peer safe to show: invalid UTF-8 and
// control or other non-printing characters become escapes.
func printable(b []byte) string {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 || !unicode.IsPrint(r) {
			q := strconv.QuoteToASCII(string(b[:max(n, 1)]))
			out = append(out, q[1:len(q)-1]...)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[max(n, 1):]
	}
	return string(out)
}

// The MACs bind a message to its connection (both nonces), to the rank
// and to what it carries; the labels keep a hello's MAC from ever being a
// payload's.
func helloMAC(token string, server, client [nonceLen]byte, rank, world uint32) [macLen]byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("purecuda rendezvous v1 hello\x00"))
	m.Write(server[:])
	m.Write(client[:])
	var b [8]byte
	binary.BigEndian.PutUint32(b[0:4], rank)
	binary.BigEndian.PutUint32(b[4:8], world)
	m.Write(b[:])
	var out [macLen]byte
	m.Sum(out[:0])
	return out
}

func payloadMAC(token string, server, client [nonceLen]byte, rank uint32, data []byte) [macLen]byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("purecuda rendezvous v1 payload\x00"))
	m.Write(server[:])
	m.Write(client[:])
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], rank)
	m.Write(b[:])
	m.Write(data)
	var out [macLen]byte
	m.Sum(out[:0])
	return out
}
