/*
 * bcryptprimitives.c: a stand-in for Windows' bcryptprimitives.dll, which
 * Wine 8.0 lacks. Go binaries since Go 1.22 load it at start-up for
 * ProcessPrng (the runtime's source of random bytes) and die without it.
 * It exports that one function, filled from advapi32's RtlGenRandom
 * (exported as SystemFunction036). Built without the C runtime:
 *
 *     x86_64-w64-mingw32-gcc -O2 -shared -nostdlib -Wl,-e,DllMain \
 *         -o bcryptprimitives.dll bcryptprimitives.c -ladvapi32 -lkernel32
 *
 * and put into the Wine prefix's system32. Only for running the tests under
 * Wine (.ci/windows-wine); real Windows has its own.
 */
typedef int BOOL;
typedef unsigned char BYTE;
typedef unsigned long ULONG;
typedef unsigned long long SIZE_T;

__declspec(dllimport) BOOL __stdcall SystemFunction036(void *buf, ULONG len);

__declspec(dllexport) BOOL __stdcall ProcessPrng(BYTE *data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x40000000u ? 0x40000000u : (ULONG)len;
        if (!SystemFunction036(data, n)) return 0;
        data += n;
        len -= n;
    }
    return 1;
}

BOOL __stdcall DllMain(void *module, ULONG reason, void *reserved) {
    (void)module; (void)reason; (void)reserved;
    return 1;
}
