package dl_test

import (
	"errors"
	"io"
	"testing"

	"github.com/purecuda/purecuda/internal/dl"
)

func TestFailedNamesTheCallAndKeepsTheError(t *testing.T) {
	for _, tc := range []struct {
		pkg, call string
		want      string
	}{
		{"", "cuMemAlloc", "cuMemAlloc: EOF"},
		{"cublas", "cublasSgemm_v2", "cublas: cublasSgemm_v2: EOF"},
	} {
		err := dl.Failed(tc.pkg, tc.call, io.EOF)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Failed(%q, %q, EOF) = %v, want %q", tc.pkg, tc.call, err, tc.want)
		}
		if !errors.Is(err, io.EOF) {
			t.Errorf("errors.Is(%v, io.EOF) = false, want true", err)
		}
		var ce *dl.CallError
		if !errors.As(err, &ce) || ce.Call != tc.call || ce.Pkg != tc.pkg {
			t.Errorf("errors.As(%v) = %+v, want the call %q of %q", err, ce, tc.call, tc.pkg)
		}
	}
}

func TestFailedKeepsNil(t *testing.T) {
	if err := dl.Failed("cuda", "cuMemFree", nil); err != nil {
		t.Errorf("Failed(nil) = %v, want nil", err)
	}
}
