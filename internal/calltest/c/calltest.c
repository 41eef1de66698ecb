/* The call-path fixture (see calltest.h): every function checks the values
 * its arguments arrive with, writes through its pointers and returns 0, or
 * 100 + the position of the first argument that arrived wrong. The values
 * are chosen so that a float read as a double, a double read as a float,
 * an argument taken from the wrong register or stack slot, or a sign lost
 * in a 32-bit integer shows. */
#include "calltest.h"

#ifdef _WIN32
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif

#define CHECK(pos, cond) do { if (!(cond)) return (calltestStatus)(100 + (pos)); } while (0)

EXPORT calltestStatus calltestNormal(calltestGen gen, float *out, size_t n, float mean, float stddev) {
    CHECK(0, (size_t)gen == 0x51);
    CHECK(1, out != NULL);
    CHECK(2, n == 0x123456789aull);
    CHECK(3, mean == -1.5f);
    CHECK(4, stddev == 0.25f);
    out[0] = mean * stddev; /* -0.375 */
    out[1] = (float)n;
    return CALLTEST_OK;
}

EXPORT calltestStatus calltestPoisson(calltestGen gen, unsigned int *out, size_t n, double lambda) {
    CHECK(0, (size_t)gen == 0x52);
    CHECK(1, out != NULL);
    CHECK(2, n == 3);
    CHECK(3, lambda == 1e300);
    for (size_t i = 0; i < n; i++) out[i] = 0xfedc0000u + (unsigned int)i;
    return CALLTEST_OK;
}

EXPORT calltestStatus calltestMixed(int a, float b, double c, void *p, float d,
                                    unsigned long long e, double f, float g, int *out) {
    CHECK(0, a == -7);
    CHECK(1, b == 3.5f);
    CHECK(2, c == 1.0 / 3.0);
    CHECK(3, p == (void *)out);
    CHECK(4, d == -0.0f && 1.0f / d < 0);
    CHECK(5, e == 0xfedcba9876543210ull);
    CHECK(6, f == 6.02214076e23);
    CHECK(7, g == 16777215.0f);
    *out = 42;
    return CALLTEST_OK;
}

/* calltestWide: eight floating-point arguments (every register System V
 * and AAPCS64 have for them) between ten integers, so that the integers
 * reach the stack on every system; on Windows x64 everything past the
 * fourth argument is on the stack. */
EXPORT calltestStatus calltestWide(int i0, float f0, long long i1, double f1, int i2, float f2,
                                   long long i3, double f3, int i4, float f4, long long i5,
                                   double f5, int i6, float f6, long long i7, double f7,
                                   int i8, long long i9, double *out) {
    long long ints[10] = {i0, i1, i2, i3, i4, i5, i6, i7, i8, i9};
    double fl[8] = {f0, f1, f2, f3, f4, f5, f6, f7};
    static const int intPos[10] = {0, 2, 4, 6, 8, 10, 12, 14, 16, 17};
    for (int k = 0; k < 10; k++) {
        long long want = (k % 2 == 0) ? -(k + 1) : (0x100000000ll * (k + 1) + k);
        CHECK(intPos[k], ints[k] == want);
    }
    for (int k = 0; k < 8; k++) {
        double want = (k + 1) + 0.5;
        if (k % 2 == 1) want += 1e-12; /* doubles: not representable as a float */
        CHECK(2 * k + 1, fl[k] == want);
    }
    double sum = 0;
    for (int k = 0; k < 8; k++) sum += fl[k];
    *out = sum;
    return CALLTEST_OK;
}

EXPORT calltestStatus calltestDoubles(double a, double b, double c, double d, double e, int *out) {
    CHECK(0, a == 1e-300);
    CHECK(1, b == -2.0);
    CHECK(2, c == 3.25);
    CHECK(3, d == 4e10);
    CHECK(4, e == 5.5);
    *out = 5;
    return CALLTEST_OK;
}
