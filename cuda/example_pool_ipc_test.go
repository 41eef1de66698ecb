//go:build linux

package cuda_test

import (
	"log"
	"net"
	"os"
	"syscall"

	"github.com/purecuda/purecuda/cuda"
)

// Two processes on one host share a buffer: the exporter sends its pool's
// file descriptor over a unix socket (SCM_RIGHTS) with the buffer's
// PoolPointer; the importer opens both. (Not run by go test: it takes two
// processes; TestPoolIPCAcrossProcesses runs the same.)
func ExampleExportPointer() {
	devs, err := cuda.Devices()
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := devs[0].Context()
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	s, err := ctx.NewStream()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	pool, err := cuda.NewMemPool(devs[0], cuda.Exportable())
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	buf, err := cuda.AllocFrom[float32](pool, s, 1<<20)
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free() // after the importer has freed its Slice
	file, err := pool.Export()
	if err != nil {
		log.Fatal(err)
	}
	defer file.Close()
	ptr, err := cuda.ExportPointer(buf)
	if err != nil {
		log.Fatal(err)
	}
	msg, _ := ptr.MarshalBinary()
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: os.Getenv("PEER_SOCKET"), Net: "unix"})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	rights := syscall.UnixRights(int(file.Fd()))
	if _, _, err := conn.WriteMsgUnix(msg, rights, nil); err != nil {
		log.Fatal(err)
	}
	// The importer: f from the message's rights, p from its bytes,
	//	pool, _ := cuda.ImportMemPool(dev, f)
	//	buf, _ := cuda.ImportPointer[float32](pool, s, p)
}
