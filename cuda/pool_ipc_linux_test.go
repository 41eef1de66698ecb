package cuda_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// envPoolIPCChild marks the child process of TestPoolIPCAcrossProcesses.
const envPoolIPCChild = "PURECUDA_POOL_IPC_CHILD"

// Two processes share device memory the way NCCL's ranks on one host do:
// the parent allocates from an exportable pool and sends the pool's file
// descriptor (SCM_RIGHTS over a unix socket) and the allocation's
// PoolPointer to a child (this test binary again); the child imports
// them, checks the parent's data, adds 1 to each element with a kernel,
// frees its mapping and says so; the parent then reads the child's
// result from its own Slice.
func TestPoolIPCAcrossProcesses(t *testing.T) {
	if os.Getenv(envPoolIPCChild) != "" {
		poolIPCChild(t)
		return
	}
	f := newFixture(t)
	d := f.ctx.Device()
	pool, err := cuda.NewMemPool(d, cuda.Exportable())
	testenv.Must(t, err)
	defer pool.Close()
	const n = 256
	want := make([]int32, n)
	for i := range want {
		want[i] = int32(3 * i)
	}
	x, err := cuda.AllocFrom[int32](pool, f.s, n)
	testenv.Must(t, err)
	defer x.Free()
	testenv.Must(t, cuda.CopyToDevice(f.s, x, want))
	sync(t, f.s) // the allocation and the data are complete before the child looks
	// The pool is shared before its allocation is: the driver refuses
	// cuMemPoolExportPointer (INVALID_VALUE) on a pool not yet exported.
	file, err := pool.Export()
	testenv.Must(t, err)
	defer file.Close()
	ptr, err := cuda.ExportPointer(x)
	testenv.Must(t, err)

	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	testenv.Must(t, err)
	mine, theirs := os.NewFile(uintptr(fds[0]), "parent"), os.NewFile(uintptr(fds[1]), "child")
	defer mine.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.ChildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPoolIPCAcrossProcesses$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), envPoolIPCChild+"=1")
	cmd.ExtraFiles = []*os.File{theirs} // descriptor 3 in the child
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	testenv.Must(t, cmd.Start())
	theirs.Close()
	msg, err := ptr.MarshalBinary()
	testenv.Must(t, err)
	testenv.Must(t, syscall.Sendmsg(fds[0], msg, syscall.UnixRights(int(file.Fd())), nil, 0))
	// The child's answer, or the end of the socket when it exits (or is
	// killed at ChildTimeout).
	reply := make([]byte, 1)
	got, rerr := mine.Read(reply)
	werr := cmd.Wait()
	t.Logf("the child process:\n%s", out.String())
	if ctx.Err() != nil {
		t.Fatalf("the child ran past %v", testenv.ChildTimeout)
	}
	if werr != nil || got != 1 || rerr != nil || reply[0] != 'k' {
		t.Fatalf("the child: exit %v, answer %q (%v)", werr, reply[:got], rerr)
	}
	if !bytes.Contains(out.Bytes(), []byte("--- PASS: TestPoolIPCAcrossProcesses")) {
		t.Fatal("the child did not pass")
	}
	for i := range want {
		want[i]++
	}
	if res := read(t, f.s, x); !slices.Equal(res, want) {
		t.Errorf("the parent's Slice after the child's kernel: %v..., want %v...", res[:4], want[:4])
	}
}

// poolIPCChild is the child's side: descriptor 3 is its end of the socket.
func poolIPCChild(t *testing.T) {
	sock := os.NewFile(3, "socket")
	defer sock.Close()
	buf := make([]byte, 128)
	oob := make([]byte, syscall.CmsgSpace(4))
	n, oobn, _, _, err := syscall.Recvmsg(3, buf, oob, 0)
	testenv.Must(t, err)
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	testenv.Must(t, err)
	if len(msgs) != 1 {
		t.Fatalf("%d control messages, want 1", len(msgs))
	}
	rights, err := syscall.ParseUnixRights(&msgs[0])
	testenv.Must(t, err)
	if len(rights) != 1 {
		t.Fatalf("%d descriptors, want 1", len(rights))
	}
	file := os.NewFile(uintptr(rights[0]), "pool")
	var ptr cuda.PoolPointer
	testenv.Must(t, ptr.UnmarshalBinary(buf[:n]))

	f := newFixture(t)
	pool, err := cuda.ImportMemPool(f.ctx.Device(), file)
	testenv.Must(t, err)
	testenv.Must(t, file.Close())
	// As NVIDIA's IPC sample does: give this process's device access to
	// the imported pool where it has none yet.
	a, err := pool.Access(f.ctx.Device())
	testenv.Must(t, err)
	t.Logf("the imported pool's access from this device: %v", a)
	if a != cuda.PoolAccessReadWrite {
		testenv.Must(t, pool.SetAccess(f.ctx.Device(), cuda.PoolAccessReadWrite))
	}
	x, err := cuda.ImportPointer[int32](pool, f.s, ptr)
	testenv.Must(t, err)
	got := read(t, f.s, x)
	for i, v := range got {
		if v != int32(3*i) {
			t.Fatalf("element %d through the imported pointer = %d, want %d", i, v, 3*i)
		}
	}
	testenv.Must(t, f.s.Launch(f.fn(t, "add_one_i32"), cuda.Grid(1, 1, 1), cuda.Block(len(got), 1, 1), x.Arg(), cuda.Uint64(uint64(len(got)))))
	sync(t, f.s)
	testenv.Must(t, x.Free())
	bounded, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	testenv.Must(t, f.ctx.Sync(bounded)) // the free is done before the parent may free
	testenv.Must(t, pool.Close())
	if _, err := sock.Write([]byte{'k'}); err != nil {
		t.Fatal(err)
	}
}
