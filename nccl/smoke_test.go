package nccl_test

import (
	"testing"

	"github.com/purecuda/purecuda/nccl"
)

func TestSmokeAllReduce(t *testing.T) {
	ranks := initAll(t, 4)
	bufs := make([][2]any, 4)
	_ = bufs
	var recvs []any
	err := nccl.Group(func() error {
		for i, r := range ranks {
			send := upload(t, r, []float32{float32(i), 1, 2})
			recv := upload(t, r, make([]float32, 3))
			recvs = append(recvs, recv)
			if err := nccl.AllReduce(r.c, r.s, send, recv, nccl.Sum); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	syncAll(t, ranks)
	t.Log(recvs)
}
