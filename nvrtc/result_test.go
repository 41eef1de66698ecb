package nvrtc

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestResultWorksWithErrorsIs(t *testing.T) {
	err := fmt.Errorf("nvrtcCompileProgram: %w", (&proc{}).result(uintptr(NVRTC_ERROR_COMPILATION)))
	if !errors.Is(err, NVRTC_ERROR_COMPILATION) || errors.Is(err, NVRTC_ERROR_INVALID_INPUT) {
		t.Fatalf("errors.Is does not tell %v apart", err)
	}
	if !strings.HasPrefix(NVRTC_ERROR_COMPILATION.Error(), "NVRTC_ERROR_COMPILATION (6)") {
		t.Errorf("message %q", NVRTC_ERROR_COMPILATION.Error())
	}
	if got := Result(99).Error(); !strings.HasPrefix(got, "nvrtcResult(99) (99)") {
		t.Errorf("unknown value: message %q", got)
	}
	if (&proc{}).result(0) != nil {
		t.Error("NVRTC_SUCCESS is an error")
	}
}

func TestFailedResultAllocatesNothing(t *testing.T) {
	p := &proc{}
	var err error
	if n := testing.AllocsPerRun(100, func() { err = p.result(uintptr(NVRTC_ERROR_INVALID_PROGRAM)) }); n != 0 {
		t.Errorf("a failed result allocates %v times", n)
	}
	if err != NVRTC_ERROR_INVALID_PROGRAM {
		t.Errorf("got %v", err)
	}
}

func TestCompileRefusesBadInputBeforeLoading(t *testing.T) {
	for _, c := range []struct {
		name string
		src  string
		opts []Option
		want string
	}{
		{"empty source", " \n", nil, "empty source"},
		{"NUL in source", "extern \"C\" __global__ void k() {}\x00", nil, "the source holds a NUL byte"},
		{"virtual arch for cubin", "x", []Option{CUBIN("compute_90")}, `CUBIN("compute_90")`},
		{"bare number", "x", []Option{CUBIN("90")}, `CUBIN("90")`},
		{"empty name", "x", []Option{Name("")}, "empty Name"},
		{"empty flag", "x", []Option{Flags("")}, "empty flag"},
		{"nameless header", "x", []Option{Header("", "int x;")}, "header without a name"},
		{"empty expression", "x", []Option{NameExpressions("")}, "empty name expression"},
		{"NUL in expression", "x", []Option{NameExpressions("k\x00")}, "a name expression holds a NUL byte"},
		{"nil option", "x", []Option{nil}, "nil Option"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := Compile(c.src, c.opts...)
			if out != nil || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Compile = %v, %v; want an error containing %q", out, err, c.want)
			}
			if errors.Is(err, ErrNoLibrary) {
				t.Fatalf("bad input reached the loader: %v", err)
			}
		})
	}
}

func TestOutputLoweredNameOfAnUnknownExpression(t *testing.T) {
	o := &Output{lowered: map[string]string{"k<int>": "_Z1kIiEvv"}}
	if n, err := o.LoweredName("k<int>"); err != nil || n != "_Z1kIiEvv" {
		t.Errorf("LoweredName(k<int>) = %q, %v", n, err)
	}
	if _, err := o.LoweredName("k<float>"); err == nil {
		t.Error("an expression not given to NameExpressions has a lowered name")
	}
	if got := (&Output{Code: []byte(".version 9.0\n\x00")}).PTX(); got != ".version 9.0\n" {
		t.Errorf("PTX() = %q", got)
	}
}
