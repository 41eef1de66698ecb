package graph_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

func TestRelaxedCallsDoNotInvalidateAnotherGoroutinesGlobalCapture(t *testing.T) {
	testenv.NoErrorsLogged(t)
	testenv.OnPrimary(t, 0)
	other := testenv.NewStream(t)
	var e libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	defer func() { testenv.Must(t, libcuda.EventDestroy(e)) }()
	testenv.Must(t, libcuda.EventRecord(e, other))
	end := blockedCapture(t, testenv.NewStream(t))
	err := sync.Relaxed(func() error {
		var d libcuda.Deviceptr
		if err := libcuda.MemAlloc(&d, 4096); err != nil {
			return err
		}
		return errors.Join(libcuda.MemFree(d), libcuda.EventSynchronize(e), libcuda.StreamQuery(other))
	})
	testenv.Must(t, errors.Join(err, end()))
}
