//go:build linux && !gpu

package nccl_test

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/nccl"
)

// A collective allocates nothing on the Go side (the call path, the
// checks, the recorded uses).
func TestAllReduceAllocatesNothing(t *testing.T) {
	ranks := initAll(t, 1)
	r := ranks[0]
	send, recv := upload(t, r, make([]float32, 256)), upload(t, r, make([]float32, 256))
	testenv.Must(t, nccl.AllReduce(r.c, r.s, send, recv, nccl.Sum))
	n := testing.AllocsPerRun(100, func() {
		if err := nccl.AllReduce(r.c, r.s, send, recv, nccl.Sum); err != nil {
			t.Fatal(err)
		}
	})
	syncAll(t, ranks)
	if n != 0 {
		t.Errorf("AllReduce allocates %v times a call", n)
	}
}
