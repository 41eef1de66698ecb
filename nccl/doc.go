// Package nccl binds NVIDIA's NCCL, the collective communication library,
// without cgo: libnccl.so.2 is opened at run time (Linux only; elsewhere
// Load says NCCL is not available) and called through the same path as
// package libcuda. The whole C API of nccl.h is generated beneath
// (zapi.go: CommInitRank, CommSplit, GroupStart, ...; errors.Is(err,
// nccl.RemoteError)); a Go-shaped layer on package cuda's types sits on
// top.
//
// Ranks meet through a UniqueID that one of them makes (NewUniqueID) and
// sends to the others; InitRank joins one rank on one device, InitAll
// makes every rank of a communicator in one process, and FromEnv does what
// torchrun does for a PyTorch process, from RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT and the job token PURECUDA_JOB_TOKEN:
//
//	c, err := nccl.FromEnv(ctx)
//	defer c.Close()
//	err = nccl.AllReduce(c, s, grads, sum, nccl.Sum)
//	err = c.Sync(ctx, s)
//
// The collectives — AllReduce, Broadcast, Reduce, AllGather,
// ReduceScatter, AlltoAll, Gather, Scatter, Send and Recv, with in-place
// forms — take cuda.Slices of the communicator's device and a cuda.Stream
// of its primary context; their element type (int8 to uint64, float32,
// float64, cuda.Half, cuda.BFloat16, Float8E4M3, Float8E5M2) gives NCCL's
// data type, and the ops are Sum, Prod, Max, Min, Avg and PreMulSum's.
// Lengths, roots, peers, devices and the stream are checked before
// anything reaches NCCL, each error naming the argument. NCCL decides
// what it supports beyond that: FP8 reductions need devices of compute
// capability 9.0, and NCCL 2.28 answers ncclInvalidArgument to Avg and
// PreMulSum of an FP8 type on a communicator of one rank.
//
// # Streams, threads and memory
//
// A collective is stream work like a kernel launch: it runs through
// cuda's Stream.Do, with the stream's context current on a locked OS
// thread, and records the stream as a reader or writer of each Slice, so
// that a Free waits for it and other streams are ordered after it.
// Collectives can be captured into a CUDA graph (Stream.Capture) and the
// graph launched many times. NCCL's group state belongs to an OS thread:
// Group runs its function between ncclGroupStart and ncclGroupEnd on one
// locked thread, and always ends the group.
//
// # Failures
//
// Nothing waits for ever. Comm.Sync waits for a stream while watching the
// communicator (ncclCommGetAsyncError), cooperatively, on package sync's
// poller: when a peer fails or the context ends, the communicator is
// aborted (ncclCommAbort), its work in flight ends, and every later call
// fails with an error matching ErrAborted. A communicator made with
// Blocking(false) is waited for the same way in InitRank and CloseContext.
// A Comm dropped without Close or Abort is aborted by the garbage
// collector, with a warning logged once.
//
// # By-value arguments
//
// ncclCommInitRank and ncclCommInitRankConfig take the 128-byte
// ncclUniqueId by value; the generated wrappers pass it as the platform's
// C compiler does (on the stack on linux/amd64, by a pointer to a copy on
// linux/arm64), which a test checks against C. InitRank itself calls
// ncclCommInitRankScalable, which takes the id by pointer.
package nccl
