//go:build !gpu

package cublas

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// An entry point the loaded library lacks (the stand-in has no Cgemm) is
// a SymbolError from that function alone.
func TestMissingEntryPointIsASymbolError(t *testing.T) {
	if err := Load(); err != nil {
		t.Fatal(err)
	}
	err := Cgemm(0, 0, 0, 0, 0, 0, nil, nil, 0, nil, 0, nil, nil, 0)
	var se *SymbolError
	if !errors.As(err, &se) || !errors.Is(err, ErrSymbol) || se.Symbol != "cublasCgemm_v2" || !strings.Contains(err.Error(), "cublasCgemm_v2") {
		t.Fatalf("got %v, want a SymbolError for cublasCgemm_v2", err)
	}
	if lib, ok := Loaded(); !ok || lib.Version < 130000 {
		t.Errorf("Loaded: %+v, %v", lib, ok)
	}
}

// Status is an error with the C name, and errors.Is compares it.
func TestStatusIsAnError(t *testing.T) {
	var err error = CUBLAS_STATUS_INVALID_VALUE
	if !errors.Is(err, CUBLAS_STATUS_INVALID_VALUE) || !strings.HasPrefix(err.Error(), "CUBLAS_STATUS_INVALID_VALUE (7)") {
		t.Errorf("%v", err)
	}
	if CUBLAS_STATUS_SUCCESS.Err() != nil || CUBLAS_STATUS_NOT_SUPPORTED.Err() != CUBLAS_STATUS_NOT_SUPPORTED {
		t.Error("Err")
	}
}

// fits32 picks the 32-bit entry points exactly when every value fits a C
// int, negative ones (increments) included.
func TestFits32(t *testing.T) {
	for _, c := range []struct {
		vals []int
		want bool
	}{
		{nil, true},
		{[]int{0, 1, 64}, true},
		{[]int{math.MaxInt32, 1}, true},
		{[]int{math.MaxInt32 + 1}, false},
		{[]int{3, math.MinInt32}, true},
		{[]int{math.MinInt32 - 1}, false},
		{[]int{-1, -64, 7}, true},
		{[]int{math.MaxInt, 0}, false},
		{[]int{math.MinInt, 0}, false},
	} {
		if got := fits32(c.vals...); got != c.want {
			t.Errorf("fits32(%v) = %v, want %v", c.vals, got, c.want)
		}
	}
}
