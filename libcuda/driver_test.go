package libcuda_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// These tests cover the generated bindings and the hand-written parts of
// libcuda against a driver: the simulator by default, the GPU with -tags gpu.

func TestDriverReportsVersionAtLeast12(t *testing.T) {
	var v int32
	testenv.Must(t, libcuda.DriverGetVersion(&v))
	if v < 12000 {
		t.Fatalf("driver version %d, want >= 12000", v)
	}
	lib, ok := libcuda.Loaded()
	if !ok || lib.Version != int(v) {
		t.Fatalf("Loaded() = %+v, %v; want version %d", lib, ok, v)
	}
	t.Logf("driver %s at %s (cuGetProcAddress_v2: %v)", libcuda.FormatVersion(int(v)), lib.Path, lib.ProcAddress)
}

func TestDevicesHaveNameMemoryAndCapability(t *testing.T) {
	var n int32
	testenv.Must(t, libcuda.DeviceGetCount(&n))
	if n < 1 {
		t.Fatalf("%d devices", n)
	}
	for i := range n {
		var dev libcuda.Device
		testenv.Must(t, libcuda.DeviceGet(&dev, i))
		var name [256]byte
		testenv.Must(t, libcuda.DeviceGetName(&name[0], int32(len(name)), dev))
		s := string(name[:bytes.IndexByte(name[:], 0)])
		var mem uint64
		testenv.Must(t, libcuda.DeviceTotalMem(&mem, dev))
		var major, minor int32
		testenv.Must(t, libcuda.DeviceGetAttribute(&major, libcuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
		testenv.Must(t, libcuda.DeviceGetAttribute(&minor, libcuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
		if s == "" || mem == 0 || major < 7 {
			t.Errorf("device %d: name %q, memory %d, compute capability %d.%d", i, s, mem, major, minor)
		}
		t.Logf("device %d: %s, %d MiB, sm_%d%d", i, s, mem>>20, major, minor)
	}
}

func TestPrimaryContextBecomesCurrent(t *testing.T) {
	ctx := testenv.PrimaryContext(t, 0)
	err := libcuda.WithContext(ctx, func() error {
		var cur libcuda.Context
		if err := libcuda.CtxGetCurrent(&cur); err != nil {
			return err
		}
		if cur != ctx {
			t.Errorf("current context %#x, want %#x", cur, ctx)
		}
		var dev libcuda.Device
		if err := libcuda.CtxGetDevice(&dev); err != nil {
			return err
		}
		if dev != 0 {
			t.Errorf("context device %d, want 0", dev)
		}
		return nil
	})
	testenv.Must(t, err)
}

func TestWithContextRestoresPreviousContextAfterPanic(t *testing.T) {
	ctx := testenv.PrimaryContext(t, 0)
	// The outer context must not be none: restoring and clearing the
	// current context would look alike.
	var dev libcuda.Device
	testenv.Must(t, libcuda.DeviceGet(&dev, 0))
	runtime.LockOSThread() // cuCtxCreate makes its context current here
	defer runtime.UnlockOSThread()
	var prev, outer libcuda.Context
	testenv.Must(t, libcuda.CtxGetCurrent(&prev))
	testenv.Must(t, libcuda.CtxCreate(&outer, nil, 0, dev))
	testenv.Must(t, libcuda.CtxSetCurrent(prev))
	defer func() { testenv.Must(t, libcuda.CtxDestroy(outer)) }()
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := libcuda.WithContext(outer, func() error {
			defer func() {
				if recover() == nil {
					t.Error("the panic did not reach WithContext's caller")
				}
				var cur libcuda.Context
				if err := libcuda.CtxGetCurrent(&cur); err != nil || cur != outer {
					t.Errorf("after the panic: current %#x, %v; want the outer context %#x", cur, err, outer)
				}
			}()
			_ = libcuda.WithContext(ctx, func() error { panic("boom") })
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}()
	testenv.Recv(t, done, "the goroutine that panicked inside WithContext")
}

func TestAllocCopyRoundTrip(t *testing.T) {
	testenv.OnPrimary(t, 0)
	const n = 1 << 18
	src := make([]int32, n)
	for i := range src {
		src[i] = int32(i*7 - 3)
	}
	size := uint64(n * 4)
	var a, b libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&a, size))
	defer func() { testenv.Must(t, libcuda.MemFree(a)) }()
	testenv.Must(t, libcuda.MemAlloc(&b, size))
	defer func() { testenv.Must(t, libcuda.MemFree(b)) }()
	testenv.Must(t, libcuda.MemcpyHtoD(a, unsafe.Pointer(&src[0]), size))
	testenv.Must(t, libcuda.MemcpyDtoD(b, a, size))
	dst := make([]int32, n)
	testenv.Must(t, libcuda.MemcpyDtoH(unsafe.Pointer(&dst[0]), b, size))
	if d := cmp.Diff(src, dst); d != "" {
		t.Fatalf("round trip changed the data (-sent +received):\n%.2000s", d)
	}
}

func TestKernelsComputeOnDeviceMemory(t *testing.T) {
	testenv.OnPrimary(t, 0)
	m := testenv.LoadKernels(t)
	const n = 10000
	var buf, out libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&buf, n*8))
	defer func() { testenv.Must(t, libcuda.MemFree(buf)) }()
	testenv.Must(t, libcuda.MemAlloc(&out, 8))
	defer func() { testenv.Must(t, libcuda.MemFree(out)) }()

	var s libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	defer func() { testenv.Must(t, libcuda.StreamDestroy(s)) }()

	// fill_i32 then add_one_i32 on n ints.
	grid, block := libcuda.Dim3{X: 16}, libcuda.Dim3{X: 256}
	testenv.Must(t, testenv.Kernel(t, m, "fill_i32").Launch(grid, block, 0, s, buf, uint64(n), int32(41)))
	testenv.Must(t, testenv.Kernel(t, m, "add_one_i32").Launch(grid, block, 0, s, buf, uint64(n)))
	ints := make([]int32, n)
	testenv.Must(t, libcuda.MemcpyDtoHAsync(unsafe.Pointer(&ints[0]), buf, n*4, s))
	testenv.Must(t, libcuda.StreamSynchronize(s))
	for i, v := range ints {
		if v != 42 {
			t.Fatalf("element %d = %d after fill 41 and add one, want 42", i, v)
		}
	}

	// sum_i64 over 1..n.
	in := make([]int64, n)
	var want int64
	for i := range in {
		in[i] = int64(i + 1)
		want += in[i]
	}
	testenv.Must(t, libcuda.MemcpyHtoD(buf, unsafe.Pointer(&in[0]), n*8))
	testenv.Must(t, testenv.Kernel(t, m, "sum_i64").Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 256}, 0, s, buf, uint64(n), out, uint64(0)))
	var got int64
	testenv.Must(t, libcuda.MemcpyDtoHAsync(unsafe.Pointer(&got), out, 8, s))
	testenv.Must(t, libcuda.StreamSynchronize(s))
	if got != want {
		t.Fatalf("sum_i64 = %d, want %d", got, want)
	}
}

func TestUnknownKernelIsNotFound(t *testing.T) {
	testenv.OnPrimary(t, 0)
	_, err := testenv.LoadKernels(t).Function("no_such_kernel")
	if !errors.Is(err, libcuda.CUDA_ERROR_NOT_FOUND) {
		t.Fatalf("got %v, want CUDA_ERROR_NOT_FOUND", err)
	}
}

func TestErrorPathReturnsResultWithDriverDescription(t *testing.T) {
	var dev libcuda.Device
	err := libcuda.DeviceGet(&dev, 9999)
	if !errors.Is(err, libcuda.CUDA_ERROR_INVALID_DEVICE) {
		t.Fatalf("cuDeviceGet(9999) = %v, want CUDA_ERROR_INVALID_DEVICE", err)
	}
	var r libcuda.Result
	if !errors.As(err, &r) || r != 101 {
		t.Fatalf("errors.As gives %d, want 101", r)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "CUDA_ERROR_INVALID_DEVICE (101): ") || len(msg) <= len("CUDA_ERROR_INVALID_DEVICE (101): ") {
		t.Fatalf("message %q lacks the name, code or the driver's description", msg)
	}
}

// recordingHandler keeps the messages logged through slog.
type recordingHandler struct {
	mu   sync.Mutex
	msgs []string
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

func TestTraceLogsFailedCallsOnly(t *testing.T) {
	h := &recordingHandler{}
	old := slog.Default()
	slog.SetDefault(slog.New(h))
	prev := libcuda.SetTrace(true)
	defer func() {
		libcuda.SetTrace(prev)
		slog.SetDefault(old)
	}()
	var n int32
	testenv.Must(t, libcuda.DeviceGetCount(&n))
	var dev libcuda.Device
	_ = libcuda.DeviceGet(&dev, 9999)
	libcuda.SetTrace(false)
	_ = libcuda.DeviceGet(&dev, 9998)

	want := []string{"cuDeviceGet returned 101 (CUDA_ERROR_INVALID_DEVICE)"}
	h.mu.Lock()
	defer h.mu.Unlock()
	if d := cmp.Diff(want, h.msgs); d != "" {
		t.Fatalf("traced messages (-want +got):\n%s", d)
	}
}

func TestCallsWithoutGoPointersAllocateNothing(t *testing.T) {
	testenv.OnPrimary(t, 0)
	var s libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	defer func() { testenv.Must(t, libcuda.StreamDestroy(s)) }()
	var cur libcuda.Context
	if n := testing.AllocsPerRun(1000, func() { _ = libcuda.CtxGetCurrent(&cur) }); n != 0 {
		t.Errorf("cuCtxGetCurrent allocates %v times per call", n)
	}
	if n := testing.AllocsPerRun(1000, func() { _ = libcuda.StreamQuery(s) }); n != 0 {
		t.Errorf("cuStreamQuery allocates %v times per call", n)
	}
	// A failing call returns a boxed Result: no allocation either.
	var dev libcuda.Device
	if n := testing.AllocsPerRun(1000, func() { _ = libcuda.DeviceGet(&dev, 9999) }); n != 0 {
		t.Errorf("a failing cuDeviceGet allocates %v times per call", n)
	}
}
