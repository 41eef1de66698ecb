// Package calltest checks internal/dl's call path for C functions that take
// float and double arguments by value, through wrappers that tools/gen
// writes (zapi.go) from c/calltest.h, the same way it writes cuRAND's. Its
// tests build c/calltest.c with the system's C compiler (on Linux, for
// amd64 and, under qemu-user in CI, arm64) or take the DLL that
// .ci/windows-wine builds with mingw-w64 ($PURECUDA_CALLTEST_DLL), and
// check that every argument arrives in C as it left Go. Its loader
// (zload.go) comes from the table too: $PURECUDA_LIBCALLTEST names the
// fixture.
package calltest
