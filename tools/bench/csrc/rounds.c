// rounds.c is loaded into the bench process as a shared library, so that
// C's register and unregister can run in the same minutes, on the same
// memory and the same thread as hostmem's: see the rows "hostmem and C in
// alternate rounds".
#include <dlfcn.h>
#include <stddef.h>

typedef int CUresult;

static CUresult (*reg)(void *, size_t, unsigned);
static CUresult (*unreg)(void *);

// pc_init finds the driver's functions in the library at path; it returns
// 0, or -1 when one is missing.
int pc_init(const char *path) {
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) return -1;
	reg = (CUresult(*)(void *, size_t, unsigned))dlsym(lib, "cuMemHostRegister_v2");
	unreg = (CUresult(*)(void *))dlsym(lib, "cuMemHostUnregister");
	return reg && unreg ? 0 : -1;
}

// pc_register_round registers and at once unregisters each of the k
// buffers of n bytes (portable, device-mapped), as the C baseline's row
// "register + unregister" does; it returns the first failure, or 0.
int pc_register_round(void **bufs, int k, size_t n) {
	for (int i = 0; i < k; i++) {
		CUresult r = reg(bufs[i], n, 3);
		if (r) return r;
		if ((r = unreg(bufs[i]))) return r;
	}
	return 0;
}
