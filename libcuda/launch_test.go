package libcuda_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// onlyKernel returns the test kernels' PTX with only the entry named: a
// module with one kernel.
func onlyKernel(t testing.TB, name string) []byte {
	t.Helper()
	ptx := kernels.PTX
	first := bytes.Index(ptx, []byte(".visible .entry "))
	start := bytes.Index(ptx, []byte(".visible .entry "+name+"("))
	if first < 0 || start < 0 {
		t.Fatalf("no entry %s in the test kernels", name)
	}
	end := bytes.Index(ptx[start:], []byte("\n}\n"))
	if end < 0 {
		t.Fatalf("entry %s has no end", name)
	}
	var b bytes.Buffer
	b.Write(ptx[:first])
	b.Write(ptx[start : start+end+3])
	return b.Bytes()
}

// loadModule loads image until the test ends (or until unload is called).
func loadModule(t testing.TB, image []byte) (m libcuda.Module, unload func()) {
	t.Helper()
	m, err := libcuda.LoadModule(image)
	testenv.Must(t, err)
	done := false
	unload = func() {
		if !done {
			done = true
			testenv.Must(t, libcuda.ModuleUnload(m))
		}
	}
	t.Cleanup(unload)
	return m, unload
}

func TestFuncParamsOfTheTestKernels(t *testing.T) {
	testenv.OnPrimary(t, 0)
	m := testenv.LoadKernels(t)
	for name, want := range map[string][]libcuda.ParamInfo{
		"spin":        {{0, 8}},
		"add_one_i32": {{0, 8}, {8, 8}},
		"fill_i32":    {{0, 8}, {8, 8}, {16, 4}},
		"sum_i64":     {{0, 8}, {8, 8}, {16, 8}, {24, 8}},
	} {
		f := testenv.Kernel(t, m, name)
		got, ok := f.Params()
		if !ok {
			t.Fatalf("%s: no parameter list (the driver has cuFuncGetParamInfo)", name)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: params %v, want %v", name, got, want)
		}
		direct, err := libcuda.FuncParams(f.Handle())
		testenv.Must(t, err)
		if fmt.Sprint(direct) != fmt.Sprint(want) {
			t.Errorf("%s: FuncParams %v, want %v", name, direct, want)
		}
		if f.Name() != name {
			t.Errorf("Name() = %q, want %q", f.Name(), name)
		}
	}
}

// launchErr launches f with args on s and returns the error, which must
// come from the argument check: no launch reaches the driver.
func launchErr(t *testing.T, f libcuda.Func, s libcuda.Stream, args ...any) error {
	t.Helper()
	err := f.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 32}, 0, s, args...)
	if err == nil {
		t.Fatalf("launch of %s with %d arguments succeeded, want a check error", f.Name(), len(args))
	}
	var r libcuda.Result
	if errors.As(err, &r) {
		t.Fatalf("launch of %s: the driver was called: %v", f.Name(), err)
	}
	return err
}

func wantIn(t *testing.T, err error, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q lacks %q", err, p)
		}
	}
}

func TestLaunchChecksTheArgumentCount(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	fill := testenv.Kernel(t, testenv.LoadKernels(t), "fill_i32")
	var p libcuda.Deviceptr
	wantIn(t, launchErr(t, fill, s, p, uint64(4)), "fill_i32", "2 arguments", "takes 3")
	wantIn(t, launchErr(t, fill, s, p, uint64(4), int32(1), int32(2)), "fill_i32", "4 arguments", "takes 3")
	wantIn(t, launchErr(t, fill, s), "fill_i32", "0 arguments", "takes 3")
}

func TestLaunchChecksEachArgumentsSize(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	fill := testenv.Kernel(t, testenv.LoadKernels(t), "fill_i32")
	var p libcuda.Deviceptr
	// A Go int where the kernel takes a C int.
	wantIn(t, launchErr(t, fill, s, p, uint64(4), 7), "fill_i32", "argument 2", "takes 4 bytes", "given 8", "(int)")
	// A 32-bit count where it takes 64 bits.
	wantIn(t, launchErr(t, fill, s, p, uint32(4), int32(7)), "argument 1", "takes 8 bytes", "given 4", "uint32")
}

func TestLaunchRefusesArgumentsThatHoldGoPointers(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	spin := testenv.Kernel(t, testenv.LoadKernels(t), "spin")
	x := uint64(0)
	type withSlice struct{ b []byte }
	for _, a := range []any{&x, []uint64{1}, "12345678", map[int]int{}, withSlice{b: []byte{1}}, nil, func() {}} {
		wantIn(t, launchErr(t, spin, s, a), "spin", "argument 0", "cannot be a kernel argument")
	}
}

// A struct or array passed by value reaches the kernel as its bytes.
func TestLaunchPassesStructArgumentsByValue(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	fill := testenv.Kernel(t, testenv.LoadKernels(t), "fill_i32")
	const n = 64
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, n*4))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemFree(dev)) })
	type ptr struct{ P libcuda.Deviceptr }
	type value struct{ V int32 }
	testenv.Must(t, fill.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 64}, 0, s, ptr{dev}, [1]uint64{n}, value{-7}))
	testenv.Must(t, libcuda.StreamSynchronize(s))
	got := make([]int32, n)
	testenv.Must(t, libcuda.MemcpyDtoH(unsafe.Pointer(&got[0]), dev, n*4))
	for i, v := range got {
		if v != -7 {
			t.Fatalf("element %d = %d, want -7", i, v)
		}
	}
}

// The parameter list belongs to the Func taken from the loaded module: after
// an unload, the next module's kernel may get the same handle, and its
// launches are checked against its own signature.
func TestLaunchAfterReloadChecksTheNewSignature(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	mA, unloadA := loadModule(t, onlyKernel(t, "add_one_i32"))
	addOne := testenv.Kernel(t, mA, "add_one_i32")
	unloadA()
	mB, _ := loadModule(t, onlyKernel(t, "fill_i32"))
	fill := testenv.Kernel(t, mB, "fill_i32")
	t.Logf("module handle reused: %v; function handle reused: %v", mA == mB, addOne.Handle() == fill.Handle())

	const n = 32
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, n*4))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemFree(dev)) })
	// add_one_i32's signature on the new kernel is refused...
	wantIn(t, launchErr(t, fill, s, dev, uint64(n)), "fill_i32", "2 arguments", "takes 3")
	// ...and fill_i32's works.
	testenv.Must(t, fill.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 32}, 0, s, dev, uint64(n), int32(5)))
	testenv.Must(t, libcuda.StreamSynchronize(s))
	got := make([]int32, n)
	testenv.Must(t, libcuda.MemcpyDtoH(unsafe.Pointer(&got[0]), dev, n*4))
	for i, v := range got {
		if v != 5 {
			t.Fatalf("element %d = %d, want 5", i, v)
		}
	}
}

// A launch in steady state allocates nothing: the arguments stay on the
// caller's stack.
func TestLaunchAllocatesNothing(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	m := testenv.LoadKernels(t)
	fill := testenv.Kernel(t, m, "fill_i32")
	const n = 256
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, n*4))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemFree(dev)) })
	value := int32(1000) // not one of the small values Go boxes without allocating
	count := uint64(n)
	var err error
	allocs := testing.AllocsPerRun(200, func() {
		value++
		if e := fill.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 256}, 0, s, dev, count, value); e != nil {
			err = e
		}
	})
	testenv.Must(t, err)
	testenv.Must(t, libcuda.StreamSynchronize(s))
	if allocs != 0 {
		t.Errorf("a launch allocates %v times, want 0", allocs)
	}
}

// Launch against the raw cuLaunchKernel of the same kernel; run with
// -benchmem: the launch allocates nothing.
func BenchmarkLaunch(b *testing.B) {
	testenv.OnPrimary(b, 0)
	s := testenv.NewStream(b)
	spin := testenv.Kernel(b, testenv.LoadKernels(b), "spin")
	b.Run("Func.Launch", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := spin.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 1}, 0, s, uint64(i&1)); err != nil {
				b.Fatal(err)
			}
		}
		testenv.Must(b, libcuda.StreamSynchronize(s))
	})
	b.Run("cuLaunchKernel", func(b *testing.B) {
		b.ReportAllocs()
		f := spin.Handle()
		for i := 0; b.Loop(); i++ {
			ns := uint64(i & 1)
			params := [1]unsafe.Pointer{unsafe.Pointer(&ns)}
			if err := libcuda.LaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, &params[0], nil); err != nil {
				b.Fatal(err)
			}
		}
		testenv.Must(b, libcuda.StreamSynchronize(s))
	})
}

// Without a parameter list (a driver before CUDA 12.4) the types are still
// checked, and each value passes widened with zeros to 8 bytes.
func TestLaunchCheckedWithoutParameterList(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	fill := testenv.Kernel(t, testenv.LoadKernels(t), "fill_i32")
	const n = 16
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, n*4))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemFree(dev)) })
	grid, block := libcuda.Dim3{X: 1}, libcuda.Dim3{X: 32}
	err := libcuda.LaunchChecked(fill.Handle(), "fill_i32", nil, grid, block, 0, s, []any{dev, uint64(n), "x"})
	if err == nil || !strings.Contains(err.Error(), "argument 2: type string cannot be a kernel argument") {
		t.Fatalf("a string argument without a parameter list = %v, want it refused", err)
	}
	for _, v := range []any{int32(-3), int16(9), 77} {
		testenv.Must(t, libcuda.LaunchChecked(fill.Handle(), "fill_i32", nil, grid, block, 0, s, []any{dev, uint64(n), v}))
		testenv.Must(t, libcuda.StreamSynchronize(s))
		got := make([]int32, n)
		testenv.Must(t, libcuda.MemcpyDtoH(unsafe.Pointer(&got[0]), dev, n*4))
		var want int32
		switch v := v.(type) {
		case int32:
			want = int32(uint32(v)) // the low 4 bytes of the widened word
		case int16:
			want = int32(uint16(v))
		case int:
			want = int32(v)
		}
		for i, x := range got {
			if x != want {
				t.Fatalf("%T %v: element %d = %d, want %d", v, v, i, x, want)
			}
		}
	}
}
