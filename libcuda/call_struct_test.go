//go:build (linux && (amd64 || arm64)) || (windows && amd64)

package libcuda

import (
	"errors"
	"sync/atomic"
	"testing"
	"unsafe"
)

// abiHandle fills an IpcMemHandle with the bytes testdata/abi.c's
// handle_bad expects.
func abiHandle() IpcMemHandle {
	var h IpcMemHandle
	for i := range h.Reserved {
		h.Reserved[i] = byte(1 + 3*i)
	}
	return h
}

// TestCallPassesLargeStructByValueThroughTheGeneratedWrapper points the
// generated IpcOpenMemHandle at a C function of cuIpcOpenMemHandle_v2's
// signature: the 64-byte handle must arrive whole, whichever way the
// platform passes it (structsOnStack), the out-pointer and the flags after
// it must line up, and the callee's changes to its copy must not reach the
// caller's value.
func TestCallPassesLargeStructByValueThroughTheGeneratedWrapper(t *testing.T) {
	fn := mustSym(t, abiLibrary(t), "abi_ipc_open")
	p := &procIpcOpenMemHandle
	resolveMu.Lock()
	saved := atomic.LoadUintptr(&p.addr)
	atomic.StoreUintptr(&p.addr, fn)
	resolveMu.Unlock()
	t.Cleanup(func() {
		resolveMu.Lock()
		atomic.StoreUintptr(&p.addr, saved)
		resolveMu.Unlock()
	})

	h := abiHandle()
	var dptr Deviceptr
	if err := IpcOpenMemHandle(&dptr, h, 0x5a); err != nil {
		t.Fatalf("IpcOpenMemHandle (structsOnStack=%v): %v (1-64: first bad byte of the handle, 100: bad flags)", structsOnStack, err)
	}
	if dptr != 0x1234567890abcdef {
		t.Errorf("out-pointer: got %#x, want 0x1234567890abcdef", dptr)
	}
	if h != abiHandle() {
		t.Error("the callee's writes to its copy of the handle reached the caller's value")
	}
	var res Result
	if err := IpcOpenMemHandle(&dptr, h, 0x5b); !errors.As(err, &res) || res != 100 {
		t.Errorf("flags 0x5b: got %v, want result 100 (the fixture saw the flags)", err)
	}
}

// TestCallPassesLargeStructBetweenIntegerArguments lays out a frame the way
// tools/gen does for a 64-byte struct after five integer arguments and
// before two more: on System V AMD64 the struct and the seventh integer go
// on the stack after six register words; elsewhere the struct is a pointer
// to a copy in its position (on the stack on Windows x64, in a register on
// arm64).
func TestCallPassesLargeStructBetweenIntegerArguments(t *testing.T) {
	fn := mustSym(t, abiLibrary(t), "abi_struct_mid")
	h := abiHandle()
	var r uintptr
	if structsOnStack {
		var f struct {
			frame
			a0, a1, a2, a3, a4, a5 uintptr // a..e, f: the six registers
			a6                     IpcMemHandle
			a14                    uintptr // g
		}
		f.fn, f.n = fn, 15
		f.a0, f.a1, f.a2, f.a3, f.a4 = 0x100, 0x101, 0x102, 0x103, 0x104
		f.a5 = 0x105
		f.a6 = h
		f.a14 = 0x106
		call(&f.frame)
		r = f.r
	} else {
		var f struct {
			frame
			a0, a1, a2, a3, a4 uintptr
			a5                 unsafe.Pointer
			a6, a7             uintptr
		}
		f.fn, f.n = fn, 8
		f.a0, f.a1, f.a2, f.a3, f.a4 = 0x100, 0x101, 0x102, 0x103, 0x104
		f.a5 = unsafe.Pointer(&h)
		f.a6, f.a7 = 0x105, 0x106
		call(&f.frame)
		r = f.r
	}
	switch got := int32(r); {
	case got == 0:
	case got >= 1000:
		t.Errorf("structsOnStack=%v: integer argument %d arrived wrong", structsOnStack, got-1000)
	default:
		t.Errorf("structsOnStack=%v: byte %d of the struct arrived wrong", structsOnStack, got-1)
	}
}
