// Functions with known answers for the call-path tests (call_test.go).
// Built as a shared library with the system C compiler.
#include <stdint.h>

// abi_args returns 0 when argument i equals 0x1000 + i for every i < n,
// else 1 + the first index that differs. Twenty arguments: eight travel in
// registers on every supported ABI, the rest on the stack.
int abi_args(int n, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5,
             uint64_t a6, uint64_t a7, uint64_t a8, uint64_t a9, uint64_t a10,
             uint64_t a11, uint64_t a12, uint64_t a13, uint64_t a14, uint64_t a15,
             uint64_t a16, uint64_t a17, uint64_t a18, uint64_t a19) {
	uint64_t a[19] = {a1, a2, a3, a4, a5, a6, a7, a8, a9, a10,
	                  a11, a12, a13, a14, a15, a16, a17, a18, a19};
	for (int i = 0; i < n && i < 19; i++) {
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

// abi_floats mixes integer and floating-point arguments the way
// cuTexRefSetMipmapLevelClamp and cuParamSetf do.
int abi_floats(int a, float b, int c, double d, float e) {
	double got = a + b * 10.0 + c * 100.0 + d * 1000.0 + e * 10000.0;
	return (int)got;
}
