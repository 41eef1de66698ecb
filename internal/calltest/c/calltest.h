/* The call-path fixture's declarations: C functions with the shapes of the
 * entry points that take float and double arguments by value (cuRAND's
 * curandGenerateNormal, curandGeneratePoisson, and wider mixes that reach
 * the stack). tools/gen writes internal/calltest's wrappers from this file;
 * calltest.c defines the functions, and internal/calltest's tests build it
 * with the system's C compiler (mingw-w64 for Wine) and call it. */
#ifndef CALLTEST_H
#define CALLTEST_H

#include <stddef.h>

typedef enum calltestStatus_enum {
    CALLTEST_OK = 0,
    CALLTEST_BAD = 1
} calltestStatus;

typedef struct calltestGen_st *calltestGen;

/* Each function returns CALLTEST_OK when every argument holds the value
 * the tests pass (see calltest.c), else 100 + the position of the first
 * argument that differs; the pointer arguments are written through. */

calltestStatus calltestNormal(calltestGen gen, float *out, size_t n, float mean, float stddev);
calltestStatus calltestPoisson(calltestGen gen, unsigned int *out, size_t n, double lambda);
calltestStatus calltestMixed(int a, float b, double c, void *p, float d,
                             unsigned long long e, double f, float g, int *out);
calltestStatus calltestWide(int i0, float f0, long long i1, double f1, int i2, float f2,
                            long long i3, double f3, int i4, float f4, long long i5,
                            double f5, int i6, float f6, long long i7, double f7,
                            int i8, long long i9, double *out);
calltestStatus calltestDoubles(double a, double b, double c, double d, double e, int *out);

#endif
