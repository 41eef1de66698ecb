// Functions with known answers for the call-path tests (call_test.go,
// call_struct_test.go). Built as a shared library with the system C compiler
// on Linux (call_linux_test.go), and as a DLL with x86_64-w64-mingw32-gcc for
// windows/amd64 (.ci/windows-wine).
#include <stdint.h>

// abi_args returns 0 when argument i equals 0x1000 + i for every i < n,
// else 1 + the first index that differs. Twenty-eight arguments (dl's
// MaxArgWords): the first eight travel in registers on arm64, six on
// System V AMD64 and four on Windows x64; the rest on the stack.
int abi_args(int n, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8, uint64_t a9, uint64_t a10, uint64_t a11, uint64_t a12, uint64_t a13, uint64_t a14, uint64_t a15, uint64_t a16, uint64_t a17, uint64_t a18, uint64_t a19, uint64_t a20, uint64_t a21, uint64_t a22, uint64_t a23, uint64_t a24, uint64_t a25, uint64_t a26, uint64_t a27) {
	uint64_t a[27] = {a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27};
	for (int i = 0; i < n && i < 27; i++) {
		if (a[i] != 0x1000u + (uint64_t)(i + 1)) return i + 1;
	}
	return 0;
}

// abi_out writes through its pointer arguments, as driver out-parameters do.
int abi_out(int32_t *i, uint64_t *u, void **p) {
	*i = -7;
	*u = 0xfedcba9876543210ull;
	*p = (void *)u;
	return 0;
}

// abi_negative returns its int argument: checks sign extension of 32-bit
// values and that only the low 32 bits of the return register count.
int abi_negative(int v) { return v; }

// abi_handle has the shape of CUipcMemHandle: 64 bytes, passed by value.
// Such a struct is copied onto the stack on System V AMD64 and passed as a
// pointer to a caller's copy on Windows x64 and arm64.
typedef struct { char reserved[64]; } abi_handle;

// handle_bad returns 0 when h holds the bytes 1 + 3*i, else 1 + the first
// index that differs; it then scribbles on its copy, which the caller's
// value must not see.
static int handle_bad(abi_handle *h) {
	int bad = 0;
	for (int i = 0; i < 64; i++) {
		if ((unsigned char)h->reserved[i] != (unsigned char)(1 + 3 * i)) { bad = i + 1; break; }
	}
	for (int i = 0; i < 64; i++) ((volatile char *)h->reserved)[i] = 0;
	return bad;
}

// abi_ipc_open has cuIpcOpenMemHandle_v2's signature. It returns 0 when
// handle and flags (0x5a) arrived intact and writes 0x1234567890abcdef
// through pdptr; else the index of the first bad byte (1-64), or 100 for bad
// flags.
int abi_ipc_open(unsigned long long *pdptr, abi_handle handle, unsigned int flags) {
	int bad = handle_bad(&handle);
	if (bad) return bad;
	if (flags != 0x5a) return 100;
	*pdptr = 0x1234567890abcdefull;
	return 0;
}

// abi_struct_mid takes a large struct after five integer arguments and
// before two more, so that it meets the stack on every ABI: System V puts
// a..f in registers and the struct, then g, on the stack; Windows x64 puts
// a..d in registers and e, the pointer, f and g on the stack. It returns 0
// when every argument arrived intact (a..g = 0x100 + position), else 1000 +
// the position of the first bad integer or the bad byte index from
// handle_bad.
int abi_struct_mid(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e,
                   abi_handle h, uint64_t f, uint64_t g) {
	uint64_t v[7] = {a, b, c, d, e, f, g};
	for (int i = 0; i < 7; i++) {
		if (v[i] != 0x100u + (uint64_t)i) return 1000 + i;
	}
	return handle_bad(&h);
}

// The pinned-call tests (call_pinned_linux_test.go).

// abi_sp returns an address in its own frame: where the stack it runs on
// is.
uintptr_t abi_sp(void) {
	volatile char c = 0;
	return (uintptr_t)&c;
}

// abi_stack uses kib KiB of stack (kib nested frames of a KiB each) and
// returns kib when every frame read back what it wrote.
int abi_stack(int kib) {
	if (kib <= 0) return 0;
	volatile unsigned char buf[1024];
	for (int i = 0; i < 1024; i++) buf[i] = (unsigned char)(i ^ kib);
	int ok = 1;
	for (int i = 0; i < 1024; i++) ok &= buf[i] == (unsigned char)(i ^ kib);
	return abi_stack(kib - 1) + ok;
}

// abi_spin counts to n: C code that takes a while without a system call.
int abi_spin(long long n) {
	volatile long long i;
	for (i = 0; i < n; i++) {
	}
	return 0;
}

// abi_wait_flag returns 0 once *flag is nonzero, or 1 after max checks.
int abi_wait_flag(volatile int32_t *flag, long long max) {
	for (long long i = 0; i < max; i++) {
		if (*flag) return 0;
	}
	return 1;
}
