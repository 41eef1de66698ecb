//go:build !gpu

package cublaslt_test

import (
	"errors"
	"github.com/purecuda/purecuda/graph"
	"runtime"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cublaslt"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

const statusInternalError = int(cublas.CUBLAS_STATUS_INTERNAL_ERROR)

// A plan is made for the Lt's workspace size: SetWorkspace with another
// size makes the next Matmul ask the heuristic again, and the algorithm
// it chose for a workspace is never run without one (the stand-in's
// algorithm takes all the workspace it is allowed). Going back to a size
// seen before takes its plan again.
func TestAPlanIsMadeAgainForAnotherWorkspaceSize(t *testing.T) {
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	x := upload(t, f.s, randoms(16, 31))
	d := upload(t, f.s, make([]float32, 16))
	op := cublaslt.Op{M: 4, N: 4, K: 4}
	ws1, err := cuda.Alloc[byte](f.s, 1<<10)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, ws1.Free()) })
	ws2, err := cuda.Alloc[byte](f.s, 2<<10)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, ws2.Free()) })
	zero := cuda.Slice[byte]{}
	for i, c := range []struct {
		ws        cuda.Slice[byte]
		heuristic int64 // 1: a new plan
		plans     int
	}{
		{ws1, 1, 1},
		{zero, 1, 2},
		{ws2, 1, 3},
		{ws1, 0, 3},
		{zero, 0, 3},
	} {
		testenv.Must(t, f.lt.SetWorkspace(c.ws))
		before := heuristics(t)
		if err := cublaslt.Matmul(f.lt, op, 1, x, x, 0, cuda.Slice[float32]{}, d, cuda.Slice[float32]{}); err != nil {
			t.Fatalf("Matmul %d, workspace of %d bytes: %v", i, c.ws.Len(), err)
		}
		if n := heuristics(t) - before; n != c.heuristic {
			t.Errorf("Matmul %d, workspace of %d bytes: %d heuristic calls, want %d", i, c.ws.Len(), n, c.heuristic)
		}
		if n := testenv.BLASStat(t, "lt_ws_size"); n != int64(c.ws.Len()) {
			t.Errorf("Matmul %d: given a workspace size of %d, want the Lt's %d", i, n, c.ws.Len())
		}
		if given, want := testenv.BLASStat(t, "lt_ws_given"), c.ws.Len() > 0; (given == 1) != want {
			t.Errorf("Matmul %d: given a workspace pointer: %v, want %v", i, given == 1, want)
		}
		if p := f.lt.Plans(); p != c.plans {
			t.Errorf("Matmul %d: %d plans, want %d", i, p, c.plans)
		}
	}
}

// A plan is made for the element types too: the same Op on other types
// asks the heuristic again (which the stand-in refuses for float64,
// as for the integer types), and the plan that failed is neither kept nor leaked.
func TestAPlanIsMadeForTheElementTypes(t *testing.T) {
	f := newFixture(t)
	op := cublaslt.Op{M: 2, N: 2, K: 2}
	x := upload(t, f.s, make([]float32, 4))
	h := upload(t, f.s, make([]float64, 4))
	testenv.Must(t, cublaslt.Matmul(f.lt, op, 1, x, x, 0, cuda.Slice[float32]{}, x, cuda.Slice[float32]{}))
	settle(t) // the destroys of earlier tests' handles are done
	objects := testenv.BLASStat(t, "lt_objects")
	for name, call := range map[string]func() error{
		"float64 inputs": func() error {
			return cublaslt.Matmul(f.lt, op, 1, h, h, 0, cuda.Slice[float32]{}, x, cuda.Slice[float32]{})
		},
		"float64 output": func() error {
			return cublaslt.Matmul(f.lt, op, 1, x, x, 0, cuda.Slice[float64]{}, h, cuda.Slice[float64]{})
		},
	} {
		before := heuristics(t)
		if err := call(); !errors.Is(err, cublas.CUBLAS_STATUS_NOT_SUPPORTED) {
			t.Errorf("%s: %v, want the heuristic's NOT_SUPPORTED", name, err)
		}
		if n := heuristics(t) - before; n != 1 {
			t.Errorf("%s: %d heuristic calls, want 1 (a plan of its own)", name, n)
		}
	}
	if p := f.lt.Plans(); p != 1 {
		t.Errorf("%d plans, want the float32 one", p)
	}
	if n := testenv.BLASStat(t, "lt_objects"); n != objects {
		t.Errorf("%d cuBLASLt descriptors, layouts and preferences live, want %d: the failed plans leaked", n, objects)
	}
}

// Each step of making a plan can fail: the Matmul fails naming it, what
// the plan had made is destroyed, nothing is cached (the next Matmul
// makes the plan), and no lock is kept: the next Matmul, SetWorkspace and
// Close return.
func TestAPlanThatFailsLeavesNothingAndKeepsNoLock(t *testing.T) {
	for _, c := range []struct {
		fail  string
		skip  int // calls of it that succeed first
		names string
	}{
		{"cublasLtMatmulDescCreate", 0, "cublasLtMatmulDescCreate"},
		{"cublasLtMatmulDescSetAttribute", 0, "cublasLtMatmulDescSetAttribute"},
		{"cublasLtMatrixLayoutCreate", 0, "cublasLtMatrixLayoutCreate"},
		{"cublasLtMatmulPreferenceCreate", 0, "cublasLtMatmulPreferenceCreate"},
		{"cublasLtMatmulPreferenceSetAttribute", 0, "cublasLtMatmulPreferenceSetAttribute"},
		{"cublasLtMatmulAlgoGetHeuristic", 0, "cublasLtMatmulAlgoGetHeuristic"},
		{"cublasLtMatmul", 0, "cublasLtMatmul"},
	} {
		t.Run(c.fail, func(t *testing.T) {
			f := newFixture(t)
			x := upload(t, f.s, make([]float32, 4))
			op := cublaslt.Op{M: 2, N: 2, K: 2}
			matmul := func() error {
				return cublaslt.Matmul(f.lt, op, 1, x, x, 0, cuda.Slice[float32]{}, x, cuda.Slice[float32]{})
			}
			settle(t) // the destroys of earlier tests' handles are done
			objects := testenv.BLASStat(t, "lt_objects")
			testenv.BLASFailNext(t, c.fail, 1, statusInternalError)
			err := bounded(t, "the Matmul that fails", matmul)
			if !errors.Is(err, cublas.CUBLAS_STATUS_INTERNAL_ERROR) || !strings.Contains(err.Error(), c.names) {
				t.Errorf("Matmul: %v, want CUBLAS_STATUS_INTERNAL_ERROR naming %s", err, c.names)
			}
			if c.fail != "cublasLtMatmul" {
				if n := testenv.BLASStat(t, "lt_objects"); n != objects {
					t.Errorf("%d cuBLASLt objects live after the failed plan, want %d", n, objects)
				}
				if p := f.lt.Plans(); p != 0 {
					t.Errorf("the failed plan was kept (%d plans)", p)
				}
			}
			if err := bounded(t, "a Matmul after the failure", matmul); err != nil {
				t.Errorf("a Matmul after the failure: %v", err)
			}
			if p := f.lt.Plans(); p != 1 {
				t.Errorf("%d plans after a Matmul that worked, want 1", p)
			}
			if err := bounded(t, "SetWorkspace after the failure", func() error { return f.lt.SetWorkspace(cuda.Slice[byte]{}) }); err != nil {
				t.Errorf("SetWorkspace after the failure: %v", err)
			}
			if err := bounded(t, "Close after the failure", f.lt.Close); err != nil {
				t.Errorf("Close after the failure: %v", err)
			}
			testenv.Eventually(t, "the plans' destroy", func() bool { return testenv.BLASStat(t, "lt_objects") == objects })
		})
	}
}

// A bias pointer that could not be set is set by the next Matmul that
// brings it: that Matmul adds the new bias, not the one set before.
func TestABiasThatCouldNotBeSetIsSetNextTime(t *testing.T) {
	f := newFixture(t)
	const m, n, k = 2, 2, 2
	a := upload(t, f.s, []float32{1, 0, 0, 1})
	b1, b2 := upload(t, f.s, []float32{1, 2}), upload(t, f.s, []float32{10, 20})
	d := upload(t, f.s, make([]float32, 4))
	op := cublaslt.Op{M: m, N: n, K: k, Epilogue: cublaslt.CUBLASLT_EPILOGUE_BIAS}
	testenv.Must(t, cublaslt.Matmul(f.lt, op, 1, a, a, 0, cuda.Slice[float32]{}, d, b1))
	testenv.BLASFailNext(t, "cublasLtMatmulDescSetAttribute", 1, statusInternalError)
	if err := bounded(t, "the Matmul whose bias fails", func() error {
		return cublaslt.Matmul(f.lt, op, 1, a, a, 0, cuda.Slice[float32]{}, d, b2)
	}); !errors.Is(err, cublas.CUBLAS_STATUS_INTERNAL_ERROR) || !strings.Contains(err.Error(), "BIAS_POINTER") {
		t.Errorf("the Matmul whose bias could not be set: %v", err)
	}
	testenv.Must(t, bounded(t, "the next Matmul", func() error {
		return cublaslt.Matmul(f.lt, op, 1, a, a, 0, cuda.Slice[float32]{}, d, b2)
	}))
	if got, want := download(t, f.s, d), []float32{11, 20, 10, 21}; !equal(got, want) {
		t.Errorf("D = %v, want I*I + the second bias %v", got, want)
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Close destroys the plans and the handle; a destroy that fails is
// logged, and the rest is destroyed still.
func TestCloseDestroysThePlansAndLogsAFailure(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, make([]float32, 4))
	settle(t) // the destroys of earlier tests' handles are done
	objects := testenv.BLASStat(t, "lt_objects")
	lt, err := cublaslt.New(f.s)
	testenv.Must(t, err)
	for _, n := range []int{1, 2} {
		testenv.Must(t, cublaslt.Matmul(lt, cublaslt.Op{M: 2, N: n, K: 2}, 1, x, x, 0, cuda.Slice[float32]{}, x, cuda.Slice[float32]{}))
	}
	if n := testenv.BLASStat(t, "lt_objects") - objects; n != 8 {
		t.Fatalf("%d cuBLASLt objects for two plans, want 8 (a descriptor and three layouts each)", n)
	}
	log := testenv.CaptureErrors(t)
	testenv.BLASFailNext(t, "cublasLtDestroy", 1, statusInternalError)
	testenv.Must(t, lt.Close())
	testenv.Eventually(t, "the destroy's log", func() bool { return len(log.Messages()) > 0 })
	if msgs := log.Messages(); len(msgs) != 1 || !strings.Contains(msgs[0], "cublasLtDestroy") {
		t.Errorf("logged %q, want the failed cublasLtDestroy", msgs)
	}
	if n := testenv.BLASStat(t, "lt_objects"); n != objects {
		t.Errorf("%d cuBLASLt objects live after Close, want %d", n, objects)
	}
}

// New fails when cublasLtCreate does, and leaves no handle.
func TestNewThatFailsLeavesNoHandle(t *testing.T) {
	f := newFixture(t)
	settle(t) // the destroys of earlier tests' handles are done
	live := testenv.BLASStat(t, "live_handles")
	testenv.BLASFailNext(t, "cublasLtCreate", 1, int(cublas.CUBLAS_STATUS_ALLOC_FAILED))
	lt, err := cublaslt.New(f.s)
	if lt != nil || !errors.Is(err, cublas.CUBLAS_STATUS_ALLOC_FAILED) || !strings.Contains(err.Error(), "cublasLtCreate") {
		t.Errorf("New = %v, %v", lt, err)
	}
	if n := testenv.BLASStat(t, "live_handles"); n != live {
		t.Errorf("%d live handles, want %d", n, live)
	}
}

// settle waits for the handles' destroys that earlier tests' Closes
// handed to graph.Postpone, so that the stand-in's counts move only for
// this test.
func settle(t *testing.T) {
	t.Helper()
	testenv.Must(t, graph.Drain(testenv.Context(t)))
}

// A preference that cannot be destroyed once the heuristic has answered
// is logged; the plan is made and the Matmul runs.
func TestAFailedPreferenceDestroyIsLogged(t *testing.T) {
	f := newFixture(t)
	log := testenv.CaptureErrors(t)
	x := upload(t, f.s, make([]float32, 4))
	testenv.BLASFailNext(t, "cublasLtMatmulPreferenceDestroy", 1, statusInternalError)
	testenv.Must(t, cublaslt.Matmul(f.lt, cublaslt.Op{M: 2, N: 2, K: 2}, 1, x, x, 0, cuda.Slice[float32]{}, x, cuda.Slice[float32]{}))
	if msgs := log.Messages(); len(msgs) != 1 || !strings.Contains(msgs[0], "cublasLtMatmulPreferenceDestroy") {
		t.Errorf("logged %q, want the failed cublasLtMatmulPreferenceDestroy", msgs)
	}
}

// An Lt dropped without Close is destroyed by the garbage collector, its
// plans with it.
func TestDroppedLtIsDestroyed(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, make([]float32, 4))
	settle(t)
	objects := testenv.BLASStat(t, "lt_objects")
	raw := func() uintptr {
		lt, err := cublaslt.New(f.s)
		testenv.Must(t, err)
		testenv.Must(t, cublaslt.Matmul(lt, cublaslt.Op{M: 2, N: 2, K: 2}, 1, x, x, 0, cuda.Slice[float32]{}, x, cuda.Slice[float32]{}))
		return uintptr(lt.Raw())
	}()
	testenv.Eventually(t, "the collected Lt's destroy", func() bool {
		runtime.GC()
		return !testenv.BLASLive(t, raw)
	})
	testenv.Eventually(t, "its plans' destroy", func() bool { return testenv.BLASStat(t, "lt_objects") == objects })
}

// A combination cuBLASLt has no kernel for (the heuristic answers
// CUBLAS_STATUS_NOT_SUPPORTED) fails naming the epilogue and the types,
// so that the caller can tell which of them to change.
func TestANotSupportedHeuristicNamesTheEpilogueAndTypes(t *testing.T) {
	f := newFixture(t)
	const m, n, k = 2, 2, 2
	a := upload(t, f.s, []float32{1, 0, 0, 1})
	d, grad := upload(t, f.s, make([]float32, 4)), upload(t, f.s, make([]float32, n))
	op := cublaslt.Op{M: m, N: n, K: k, Epilogue: cublaslt.CUBLASLT_EPILOGUE_BGRADB}
	testenv.BLASFailNext(t, "cublasLtMatmulAlgoGetHeuristic", 1, int(cublas.CUBLAS_STATUS_NOT_SUPPORTED))
	err := bounded(t, "the Matmul the heuristic refuses", func() error {
		return cublaslt.Matmul(f.lt, op, 1, a, a, 0, cuda.Slice[float32]{}, d, grad)
	})
	if !errors.Is(err, cublas.CUBLAS_STATUS_NOT_SUPPORTED) {
		t.Fatalf("Matmul: %v, want CUBLAS_STATUS_NOT_SUPPORTED", err)
	}
	for _, s := range []string{"cublasLtMatmulAlgoGetHeuristic", "CUBLASLT_EPILOGUE_BGRADB", "CUDA_R_32F"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("Matmul: %v, which does not name %s", err, s)
		}
	}
}
