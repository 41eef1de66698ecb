// Package rendezvous lets the processes of a job agree on a few bytes
// before they talk — the NCCL unique id — the way torchrun's processes do:
// each reads who it is from torchrun's environment (ConfigFromEnv: RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, plus the job token
// PURECUDA_JOB_TOKEN), and Exchange has rank 0 serve its bytes over TCP to
// the others. Launch starts the processes of a job on one host, as torchrun
// does.
//
// Rank 0 is a network service, so Exchange is written to be safe on a
// shared network:
//
//   - Every rank proves that it knows the job's token, and rank 0 proves
//     it back, with HMAC-SHA256 over fresh nonces of both sides: the token
//     never crosses the network, a wrong one is refused (in constant
//     time) and logged, and a rank never takes the bytes of a peer that
//     does not know it.
//   - Messages are length-prefixed frames of a small versioned binary
//     protocol (see protocol.go); a frame over its type's cap (the payload
//     is at most MaxPayload bytes) is refused before it is read, and
//     malformed bytes end their connection, never the process.
//   - Every read and write has a deadline from the context (DefaultTimeout
//     when the context has none); a connection that says nothing is
//     dropped after a few seconds, and a bounded number of connections is
//     held.
//   - Rank 0 listens on MASTER_ADDR only and closes its listener and
//     every connection before Exchange returns.
//
// What it does not do: encrypt (the payload, an NCCL unique id, is as
// visible on the wire as NCCL's own traffic), or keep a peer that floods
// rank 0 with connections from delaying the ranks (they are refused while
// rank 0 holds its limit of connections, and try again until their
// deadline). Give each job a token of its own: a rank of one job could
// otherwise fetch from the rank 0 of another that uses the same address.
//
// Exchange is also a barrier: rank 0 sends the bytes only when every rank
// has arrived, so a rank that has them knows the whole world is there, and
// a missing rank fails everyone's Exchange with an error that names it,
// instead of a collective that hangs later. The errors — a wrong token, a
// world size that differs, a duplicate rank, a rank out of range, ranks
// missing at the deadline, an unreachable rank 0 — match the package's
// Err values under errors.Is.
package rendezvous
