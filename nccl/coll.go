package nccl

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/libcuda"
)

// The collectives below check their arguments before anything reaches
// NCCL — the lengths of the Slices against each other and the
// communicator's size, a root or peer in range, the Slices on the
// communicator's device, the stream of its context — each failure an error
// naming the argument. They queue their work on the stream and return:
// Comm.Sync (or the stream's Sync) waits for it. Each Slice is recorded as
// read or written by the stream (cuda's Stream.Do), as a kernel launch
// records its arguments, so that its Free waits for the collective.

// ptr is a device address as the pointer NCCL's prototypes take; it is
// not Go memory.
func ptr(p libcuda.Deviceptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// onDevice fails unless x is a Slice of the communicator's device.
func onDevice[T Element](st *commState, op, name string, x cuda.Slice[T]) error {
	if x.Len() == 0 {
		return nil // Stream.Do refuses a zero Slice itself
	}
	if d := x.Device(); d.Ordinal() != st.dev.Ordinal() {
		return fmt.Errorf("nccl: %s: %s: a Slice of device %d, the communicator's is device %d", op, name, d.Ordinal(), st.dev.Ordinal())
	}
	return nil
}

// lengthErr is the error of a Slice of the wrong length.
func lengthErr(op, name string, got int, want string) error {
	return fmt.Errorf("nccl: %s: %s has %d elements, want %s", op, name, got, want)
}

// checkRank fails unless r is a rank of the communicator.
func checkRank(st *commState, op, name string, r int) error {
	if r < 0 || r >= st.size {
		return fmt.Errorf("nccl: %s: %s %d out of range [0, %d)", op, name, r, st.size)
	}
	return nil
}

// operands are a call's Slices (one or two), their names for errors and
// how the call uses them.
type operands[T Element] struct {
	n     int
	names [2]string
	xs    [2]cuda.Slice[T]
	acc   [2]cuda.Access
}

// one and two make the operands of a call.
func one[T Element](name string, x cuda.Slice[T], a cuda.Access) operands[T] {
	return operands[T]{n: 1, names: [2]string{name}, xs: [2]cuda.Slice[T]{x}, acc: [2]cuda.Access{a}}
}

func two[T Element](n0 string, x0 cuda.Slice[T], a0 cuda.Access, n1 string, x1 cuda.Slice[T], a1 cuda.Access) operands[T] {
	return operands[T]{n: 2, names: [2]string{n0, n1}, xs: [2]cuda.Slice[T]{x0, x1}, acc: [2]cuda.Access{a0, a1}}
}

// run makes the call f on the stream with the operands held and
// recorded (cuda's Stream.Do), after the communicator, the stream and the
// operands' devices are checked; f gets the operands' device addresses.
func run[T Element](c *Comm, op, sym string, s *cuda.Stream, o *operands[T], f func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error) error {
	st, err := c.acquire(op)
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	if err := st.checkStream(op, s); err != nil {
		return err
	}
	var ops [2]cuda.Operand
	for i := 0; i < o.n; i++ {
		if err := onDevice(st, op, o.names[i], o.xs[i]); err != nil {
			return err
		}
		ops[i] = o.xs[i].Operand(o.acc[i])
	}
	var p [2]unsafe.Pointer
	err = s.Do(sym, ops[:o.n], func(raw libcuda.Stream) error {
		for i := 0; i < o.n; i++ {
			p[i] = ptr(ops[i].Ptr())
		}
		return f(st, p, raw)
	})
	if err == nil {
		return nil
	}
	return st.failed(sym, err)
}

// failed is the error of a call that NCCL refused, or the wait for a
// non-blocking one that is still in progress.
//
//go:noinline
func (st *commState) failed(sym string, err error) error {
	if errors.Is(err, InProgress) {
		return st.await(context.Background(), sym)
	}
	var r Result
	if errors.As(err, &r) {
		return callErr(sym, st.raw, err)
	}
	return err
}

// AllReduce reduces send over every rank with op and leaves the result in
// every rank's recv (ncclAllReduce). send and recv have the same length.
func AllReduce[T Element](c *Comm, s *cuda.Stream, send, recv cuda.Slice[T], op RedOp) error {
	if send.Len() != recv.Len() {
		return lengthErr("AllReduce", "recv", recv.Len(), fmt.Sprintf("send's %d", send.Len()))
	}
	n, dt := send.Len(), TypeOf[T]()
	o := two("send", send, cuda.Read, "recv", recv, cuda.Write)
	return run(c, "AllReduce", "ncclAllReduce", s, &o,
		func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
			return allReduce(p[0], p[1], uint64(n), dt, op, st.raw, raw)
		})
}

// AllReduceInPlace is AllReduce with buf as both send and recv.
func AllReduceInPlace[T Element](c *Comm, s *cuda.Stream, buf cuda.Slice[T], op RedOp) error {
	n, dt := buf.Len(), TypeOf[T]()
	o := one("buf", buf, cuda.ReadWrite)
	return run(c, "AllReduceInPlace", "ncclAllReduce", s, &o,
		func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
			return allReduce(p[0], p[0], uint64(n), dt, op, st.raw, raw)
		})
}

// Broadcast copies root's send into every rank's recv (ncclBroadcast).
// Only root reads send, which has recv's length there; other ranks may
// pass the zero Slice.
func Broadcast[T Element](c *Comm, s *cuda.Stream, send, recv cuda.Slice[T], root int) error {
	if c.Rank() != root {
		return BroadcastInPlace(c, s, recv, root)
	}
	if send.Len() != recv.Len() {
		return lengthErr("Broadcast", "recv", recv.Len(), fmt.Sprintf("send's %d", send.Len()))
	}
	n, dt := recv.Len(), TypeOf[T]()
	o := two("send", send, cuda.Read, "recv", recv, cuda.Write)
	return run(c, "Broadcast", "ncclBroadcast", s, &o,
		func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
			if err := checkRank(st, "Broadcast", "root", root); err != nil {
				return err
			}
			return broadcast(p[0], p[1], uint64(n), dt, int32(root), st.raw, raw)
		})
}

// BroadcastInPlace copies root's buf into every other rank's buf
// (ncclBroadcast with one buffer).
func BroadcastInPlace[T Element](c *Comm, s *cuda.Stream, buf cuda.Slice[T], root int) error {
	if root < 0 || root >= c.Size() {
		return fmt.Errorf("nccl: Broadcast: root %d out of range [0, %d)", root, c.Size())
	}
	n, dt := buf.Len(), TypeOf[T]()
	o := one("buf", buf, cuda.ReadWrite)
	return run(c, "Broadcast", "ncclBroadcast", s, &o,
		func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
			return broadcast(p[0], p[0], uint64(n), dt, int32(root), st.raw, raw)
		})
}

// Reduce reduces send over every rank with op into root's recv
// (ncclReduce). Only root writes recv, which has send's length there;
// other ranks may pass the zero Slice.
func Reduce[T Element](c *Comm, s *cuda.Stream, send, recv cuda.Slice[T], op RedOp, root int) error {
	if root < 0 || root >= c.Size() {
		return fmt.Errorf("nccl: Reduce: root %d out of range [0, %d)", root, c.Size())
	}
	n, dt := send.Len(), TypeOf[T]()
	if c.Rank() != root {
		o := one("send", send, cuda.Read)
		return run(c, "Reduce", "ncclReduce", s, &o,
			func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
				return reduce(p[0], nil, uint64(n), dt, op, int32(root), st.raw, raw)
			})
	}
	if send.Len() != recv.Len() {
		return lengthErr("Reduce", "recv", recv.Len(), fmt.Sprintf("send's %d", send.Len()))
	}
	o := two("send", send, cuda.Read, "recv", recv, cuda.Write)
	return run(c, "Reduce", "ncclReduce", s, &o,
		func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
			return reduce(p[0], p[1], uint64(n), dt, op, int32(root), st.raw, raw)
		})
}

// ReduceInPlace is Reduce with buf as both send and recv (root's buf
// gets the result).
func ReduceInPlace[T Element](c *Comm, s *cuda.Stream, buf cuda.Slice[T], op RedOp, root int) error {
	if root < 0 || root >= c.Size() {
		return fmt.Errorf("nccl: Reduce: root %d out of range [0, %d)", root, c.Size())
	}
	n, dt := buf.Len(), TypeOf[T]()
	o := one("buf", buf, cuda.ReadWrite)
	return run(c, "ReduceInPlace", "ncclReduce", s, &o,
		func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
			return reduce(p[0], p[0], uint64(n), dt, op, int32(root), st.raw, raw)
		})
}

// AllGather gathers every rank's send into every rank's recv, rank r's
// at [r*len(send), (r+1)*len(send)) (ncclAllGather): recv has Size()
// times send's length.
func AllGather[T Element](c *Comm, s *cuda.Stream, send, recv cuda.Slice[T]) error {
	if recv.Len() != c.Size()*send.Len() {
		return lengthErr("AllGather", "recv", recv.Len(), fmt.Sprintf("Size() × len(send) = %d × %d", c.Size(), send.Len()))
	}
	n, dt := send.Len(), TypeOf[T]()
	o := two("send", send, cuda.Read, "recv", recv, cuda.Write)
	return run(c, "AllGather", "ncclAllGather", s, &o,
		func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
			return allGather(p[0], p[1], uint64(n), dt, st.raw, raw)
		})
}

// AllGatherInPlace is AllGather where each rank's part of buf (Size()
// equal parts, rank r's the r-th) is its send.
func AllGatherInPlace[T Element](c *Comm, s *cuda.Stream, buf cuda.Slice[T]) error {
	size := c.Size()
	if size == 0 || buf.Len()%size != 0 {
		return lengthErr("AllGatherInPlace", "buf", buf.Len(), fmt.Sprintf("a multiple of Size() = %d", size))
	}
	n, dt, rank := buf.Len()/size, TypeOf[T](), c.Rank()
	o := one("buf", buf, cuda.ReadWrite)
	return run(c, "AllGatherInPlace", "ncclAllGather", s, &o,
		func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
			part := unsafe.Add(p[0], uintptr(rank*n)*unsafe.Sizeof(*new(T)))
			return allGather(part, p[0], uint64(n), dt, st.raw, raw)
		})
}

// ReduceScatter reduces send over every rank with op and leaves part r
// of the result in rank r's recv (ncclReduceScatter): send has Size()
// times recv's length.
func ReduceScatter[T Element](c *Comm, s *cuda.Stream, send, recv cuda.Slice[T], op RedOp) error {
	if send.Len() != c.Size()*recv.Len() {
		return lengthErr("ReduceScatter", "send", send.Len(), fmt.Sprintf("Size() × len(recv) = %d × %d", c.Size(), recv.Len()))
	}
	n, dt := recv.Len(), TypeOf[T]()
	o := two("send", send, cuda.Read, "recv", recv, cuda.Write)
	return run(c, "ReduceScatter", "ncclReduceScatter", s, &o,
		func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
			return reduceScatter(p[0], p[1], uint64(n), dt, op, st.raw, raw)
		})
}

// ReduceScatterInPlace is ReduceScatter with buf as send; rank r's result
// is left in its r-th part (of Size() equal parts).
func ReduceScatterInPlace[T Element](c *Comm, s *cuda.Stream, buf cuda.Slice[T], op RedOp) error {
	size := c.Size()
	if size == 0 || buf.Len()%size != 0 {
		return lengthErr("ReduceScatterInPlace", "buf", buf.Len(), fmt.Sprintf("a multiple of Size() = %d", size))
	}
	n, dt, rank := buf.Len()/size, TypeOf[T](), c.Rank()
	o := one("buf", buf, cuda.ReadWrite)
	return run(c, "ReduceScatterInPlace", "ncclReduceScatter", s, &o,
		func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
			part := unsafe.Add(p[0], uintptr(rank*n)*unsafe.Sizeof(*new(T)))
			return reduceScatter(p[0], part, uint64(n), dt, op, st.raw, raw)
		})
}

// AlltoAll sends part j of every rank's send (of Size() equal parts) to
// rank j, which puts rank i's in its recv's part i (ncclAlltoAll). send
// and recv have the same length, a multiple of Size().
func AlltoAll[T Element](c *Comm, s *cuda.Stream, send, recv cuda.Slice[T]) error {
	size := c.Size()
	switch {
	case size == 0 || send.Len()%size != 0:
		return lengthErr("AlltoAll", "send", send.Len(), fmt.Sprintf("a multiple of Size() = %d", size))
	case recv.Len() != send.Len():
		return lengthErr("AlltoAll", "recv", recv.Len(), fmt.Sprintf("send's %d", send.Len()))
	}
	n, dt := send.Len()/size, TypeOf[T]()
	o := two("send", send, cuda.Read, "recv", recv, cuda.Write)
	return run(c, "AlltoAll", "ncclAlltoAll", s, &o,
		func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
			return alltoAll(p[0], p[1], uint64(n), dt, st.raw, raw)
		})
}

// Gather gathers every rank's send into root's recv, rank r's at
// [r*len(send), (r+1)*len(send)) (ncclGather): there recv has Size()
// times send's length; other ranks may pass the zero Slice.
func Gather[T Element](c *Comm, s *cuda.Stream, send, recv cuda.Slice[T], root int) error {
	if root < 0 || root >= c.Size() {
		return fmt.Errorf("nccl: Gather: root %d out of range [0, %d)", root, c.Size())
	}
	n, dt := send.Len(), TypeOf[T]()
	if c.Rank() != root {
		o := one("send", send, cuda.Read)
		return run(c, "Gather", "ncclGather", s, &o,
			func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
				return gather(p[0], nil, uint64(n), dt, int32(root), st.raw, raw)
			})
	}
	if recv.Len() != c.Size()*send.Len() {
		return lengthErr("Gather", "recv", recv.Len(), fmt.Sprintf("Size() × len(send) = %d × %d", c.Size(), send.Len()))
	}
	o := two("send", send, cuda.Read, "recv", recv, cuda.Write)
	return run(c, "Gather", "ncclGather", s, &o,
		func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
			return gather(p[0], p[1], uint64(n), dt, int32(root), st.raw, raw)
		})
}

// Scatter sends part r of root's send (of Size() equal parts) to rank r's
// recv (ncclScatter): there send has Size() times recv's length; other
// ranks may pass the zero Slice.
func Scatter[T Element](c *Comm, s *cuda.Stream, send, recv cuda.Slice[T], root int) error {
	if root < 0 || root >= c.Size() {
		return fmt.Errorf("nccl: Scatter: root %d out of range [0, %d)", root, c.Size())
	}
	n, dt := recv.Len(), TypeOf[T]()
	if c.Rank() != root {
		o := one("recv", recv, cuda.Write)
		return run(c, "Scatter", "ncclScatter", s, &o,
			func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
				return scatter(nil, p[0], uint64(n), dt, int32(root), st.raw, raw)
			})
	}
	if send.Len() != c.Size()*recv.Len() {
		return lengthErr("Scatter", "send", send.Len(), fmt.Sprintf("Size() × len(recv) = %d × %d", c.Size(), recv.Len()))
	}
	o := two("send", send, cuda.Read, "recv", recv, cuda.Write)
	return run(c, "Scatter", "ncclScatter", s, &o,
		func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
			return scatter(p[0], p[1], uint64(n), dt, int32(root), st.raw, raw)
		})
}

// Send sends buf to rank peer, whose Recv takes it (ncclSend). Pair
// Sends and Recvs that could wait for each other inside a Group.
func Send[T Element](c *Comm, s *cuda.Stream, buf cuda.Slice[T], peer int) error {
	if peer < 0 || peer >= c.Size() {
		return fmt.Errorf("nccl: Send: peer %d out of range [0, %d)", peer, c.Size())
	}
	n, dt := buf.Len(), TypeOf[T]()
	o := one("buf", buf, cuda.Read)
	return run(c, "Send", "ncclSend", s, &o,
		func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
			return send(p[0], uint64(n), dt, int32(peer), st.raw, raw)
		})
}

// Recv receives into buf what rank peer's Send sends, of buf's length
// (ncclRecv).
func Recv[T Element](c *Comm, s *cuda.Stream, buf cuda.Slice[T], peer int) error {
	if peer < 0 || peer >= c.Size() {
		return fmt.Errorf("nccl: Recv: peer %d out of range [0, %d)", peer, c.Size())
	}
	n, dt := buf.Len(), TypeOf[T]()
	o := one("buf", buf, cuda.Write)
	return run(c, "Recv", "ncclRecv", s, &o,
		func(st *commState, p [2]unsafe.Pointer, raw libcuda.Stream) error {
			return recv(p[0], uint64(n), dt, int32(peer), st.raw, raw)
		})
}

// PreMulSum makes the reduction that multiplies each rank's input by its
// scalar, then sums (ncclRedOpCreatePreMulSum, the scalar read now, from
// the host): pass it as the op of AllReduce, Reduce or ReduceScatter on
// Slices of T, on this communicator only; DestroyOp frees it.
func PreMulSum[T Element](c *Comm, scalar T) (RedOp, error) {
	st, err := c.acquire("PreMulSum")
	if err != nil {
		return 0, err
	}
	defer st.mu.RUnlock()
	var op RedOp
	err = st.cctx.Do(func() error {
		return RedOpCreatePreMulSum(&op, unsafe.Pointer(&scalar), TypeOf[T](), ScalarHostImmediate, st.raw)
	})
	if err != nil {
		return 0, callErr("ncclRedOpCreatePreMulSum", st.raw, err)
	}
	return op, nil
}

// DestroyOp frees a reduction PreMulSum made (ncclRedOpDestroy), once the
// calls that use it are queued.
func (c *Comm) DestroyOp(op RedOp) error {
	st, err := c.acquire("DestroyOp")
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	return callErr("ncclRedOpDestroy", st.raw, st.cctx.Do(func() error { return RedOpDestroy(op, st.raw) }))
}

// Group runs f between ncclGroupStart and ncclGroupEnd on one locked OS
// thread (NCCL's group state is the thread's), so that the collectives and
// point-to-point calls f makes are launched together: the calls on the
// several communicators of one process (InitAll), Sends and Recvs that
// would otherwise wait for each other. f must make its calls from the
// goroutine Group runs it on. The group is ended even when f fails or
// panics; Group returns f's error and the group's.
func Group(f func() error) (err error) {
	if f == nil {
		return errors.New("nccl: Group: nil function")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := GroupStart(); err != nil {
		return callErr("ncclGroupStart", 0, err)
	}
	ended := false
	defer func() {
		if !ended { // f panicked: end the group, and let the panic go on
			_ = GroupEnd()
		}
	}()
	ferr := f()
	ended = true
	eerr := GroupEnd()
	if errors.Is(eerr, InProgress) {
		eerr = nil // a non-blocking communicator's: its next call or Sync waits
	}
	return errors.Join(ferr, callErr("ncclGroupEnd", 0, eerr))
}
