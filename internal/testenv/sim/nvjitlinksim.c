/*
 * nvjitlinksim.c: a CPU stand-in for the nvJitLink entry points that
 * package nvjitlink calls, for its tests without a toolkit. It is a test
 * fixture, not a linker: it records what it is given and "links" by
 * writing a cubin that names the architecture and the inputs, with
 * nvJitLink's result codes and logs.
 *
 * Build (internal/testenv/jitlink_linux.go does it):
 *
 *     cc -O2 -shared -fPIC -pthread -o libnvjitlinksim.so nvjitlinksim.c
 *
 * What it models
 *   - __nvJitLinkCreate_13_0 takes the options; one must be -arch=sm_N
 *     (else NVJITLINK_ERROR_MISSING_ARCH, with an error log); an option
 *     it does not know (not -arch=, -lto, -O<n>, -lineinfo) is
 *     NVJITLINK_ERROR_UNRECOGNIZED_OPTION.
 *   - __nvJitLinkAddData_13_0 keeps each input's type, name and size; data
 *     that begins with "BAD" fails with NVJITLINK_ERROR_PTX_COMPILE and an
 *     error log naming the input.
 *   - __nvJitLinkComplete_13_0 fails with NVJITLINK_ERROR_LTO_NOT_ENABLED
 *     for LTO-IR inputs (type 3) without -lto, and with
 *     NVJITLINK_ERROR_PTX_COMPILE for an input whose data holds
 *     "UNDEFINED"; else the cubin is "CUBIN <arch> <name>..." and the info
 *     log "linked N inputs".
 *   - A log's size counts its NUL; a log with nothing in it has size 0.
 *
 * Test hooks: long long nvjitlinksim_stat(const char *name): "live"
 * (handles made and not destroyed), "creates", "destroys"; -1 if unknown.
 * int nvjitlinksim_fail_next(const char *name, int skip, int count, int
 * result): after skip calls that pass, the next count calls of the entry
 * point named (e.g. "__nvJitLinkComplete_13_0") return result.
 * int nvjitlinksim_last(char *buf, int n): the last Create's options and
 * the last handle's inputs, one a line ("opt -arch=sm_90", "input 3 k.ltoir
 * 12"), into buf; returns the length, or -1 if buf is too small.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OK = 0,
    UNRECOGNIZED_OPTION = 1,
    MISSING_ARCH = 2,
    INVALID_INPUT = 3,
    PTX_COMPILE = 4,
    NULL_INPUT = 10,
    LTO_NOT_ENABLED = 18,
};

#define MAX_TEXT 8192

struct link {
    char arch[32];
    int lto, inputs;
    char names[MAX_TEXT];
    char errlog[MAX_TEXT], infolog[MAX_TEXT];
    char *cubin;
    size_t cubin_size;
    int complete;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long long st_live, st_creates, st_destroys;
static char last[MAX_TEXT];

static struct {
    char name[64];
    int skip, count, result;
} fails[16];

int nvjitlinksim_fail_next(const char *name, int skip, int count, int result) {
    pthread_mutex_lock(&mu);
    int slot = -1;
    for (int i = 0; i < 16; i++) {
        if (fails[i].count > 0 && !strcmp(fails[i].name, name)) slot = i;
        if (slot < 0 && fails[i].count == 0) slot = i;
    }
    if (slot >= 0) {
        strncpy(fails[slot].name, name, sizeof fails[slot].name - 1);
        fails[slot].skip = skip;
        fails[slot].count = count;
        fails[slot].result = result;
    }
    pthread_mutex_unlock(&mu);
    return slot < 0 ? -1 : 0;
}

static int failing(const char *name) {
    int r = OK;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < 16; i++) {
        if (fails[i].count > 0 && !strcmp(fails[i].name, name)) {
            if (fails[i].skip > 0) {
                fails[i].skip--;
            } else {
                fails[i].count--;
                r = fails[i].result;
            }
            break;
        }
    }
    pthread_mutex_unlock(&mu);
    return r;
}

#define FAIL_POINT()                                                                                                   \
    do {                                                                                                               \
        int fail_ = failing(__func__);                                                                                 \
        if (fail_) return fail_;                                                                                       \
    } while (0)

long long nvjitlinksim_stat(const char *name) {
    long long v = -1;
    pthread_mutex_lock(&mu);
    if (!strcmp(name, "live")) v = st_live;
    else if (!strcmp(name, "creates")) v = st_creates;
    else if (!strcmp(name, "destroys")) v = st_destroys;
    pthread_mutex_unlock(&mu);
    return v;
}

int nvjitlinksim_last(char *buf, int n) {
    pthread_mutex_lock(&mu);
    int len = (int)strlen(last);
    if (len + 1 > n) len = -1;
    else memcpy(buf, last, (size_t)len + 1);
    pthread_mutex_unlock(&mu);
    return len;
}

static void append(char *dst, const char *s) {
    size_t have = strlen(dst);
    if (have + strlen(s) + 1 < MAX_TEXT) strcat(dst, s);
}

int nvJitLinkVersion(unsigned *major, unsigned *minor) {
    if (!major || !minor) return NULL_INPUT;
    *major = 13;
    *minor = 0;
    return OK;
}

int __nvJitLinkCreate_13_0(struct link **out, uint32_t n, const char *const *options) {
    FAIL_POINT();
    if (!out || (n > 0 && !options)) return NULL_INPUT;
    struct link *l = calloc(1, sizeof *l);
    if (!l) return INVALID_INPUT;
    pthread_mutex_lock(&mu);
    last[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        append(last, "opt ");
        append(last, options[i]);
        append(last, "\n");
    }
    pthread_mutex_unlock(&mu);
    for (uint32_t i = 0; i < n; i++) {
        const char *o = options[i];
        if (!strncmp(o, "-arch=sm_", 9)) snprintf(l->arch, sizeof l->arch, "%s", o + 6);
        else if (!strcmp(o, "-lto")) l->lto = 1;
        else if (!strncmp(o, "-O", 2) || !strcmp(o, "-lineinfo")) continue;
        else {
            free(l);
            return UNRECOGNIZED_OPTION;
        }
    }
    if (!l->arch[0]) {
        free(l);
        return MISSING_ARCH;
    }
    pthread_mutex_lock(&mu);
    st_live++;
    st_creates++;
    pthread_mutex_unlock(&mu);
    *out = l;
    return OK;
}

int __nvJitLinkDestroy_13_0(struct link **h) {
    if (!h || !*h) return NULL_INPUT;
    FAIL_POINT();
    free((*h)->cubin);
    free(*h);
    *h = NULL;
    pthread_mutex_lock(&mu);
    st_live--;
    st_destroys++;
    pthread_mutex_unlock(&mu);
    return OK;
}

int __nvJitLinkAddData_13_0(struct link *l, int type, const void *data, size_t size, const char *name) {
    if (!l || !data || !name) return NULL_INPUT;
    FAIL_POINT();
    char line[512];
    snprintf(line, sizeof line, "input %d %s %zu\n", type, name, size);
    pthread_mutex_lock(&mu);
    append(last, line);
    pthread_mutex_unlock(&mu);
    if (size >= 3 && !memcmp(data, "BAD", 3)) {
        snprintf(line, sizeof line, "error   : %s: syntax error\n", name);
        append(l->errlog, line);
        return PTX_COMPILE;
    }
    if (type == 3 && !l->lto) l->lto = -1; /* LTO-IR without -lto */
    if (memmem(data, size, "UNDEFINED", 9)) {
        snprintf(line, sizeof line, "error   : undefined reference in %s\n", name);
        append(l->errlog, line);
        l->complete = -1;
    }
    append(l->names, " ");
    append(l->names, name);
    l->inputs++;
    return OK;
}

int __nvJitLinkComplete_13_0(struct link *l) {
    if (!l) return NULL_INPUT;
    FAIL_POINT();
    if (l->lto < 0) {
        append(l->errlog, "error   : LTO-IR input without -lto\n");
        return LTO_NOT_ENABLED;
    }
    if (l->complete < 0) return PTX_COMPILE;
    char head[64];
    snprintf(head, sizeof head, "CUBIN %s", l->arch);
    l->cubin_size = strlen(head) + strlen(l->names);
    l->cubin = malloc(l->cubin_size + 1);
    if (!l->cubin) return INVALID_INPUT;
    strcpy(l->cubin, head);
    strcat(l->cubin, l->names);
    snprintf(l->infolog, sizeof l->infolog, "info    : linked %d inputs\n", l->inputs);
    l->complete = 1;
    return OK;
}

int __nvJitLinkGetLinkedCubinSize_13_0(struct link *l, size_t *size) {
    if (!l || !size) return NULL_INPUT;
    FAIL_POINT();
    if (l->complete != 1) return INVALID_INPUT;
    *size = l->cubin_size;
    return OK;
}

int __nvJitLinkGetLinkedCubin_13_0(struct link *l, void *out) {
    if (!l || !out) return NULL_INPUT;
    FAIL_POINT();
    if (l->complete != 1) return INVALID_INPUT;
    memcpy(out, l->cubin, l->cubin_size);
    return OK;
}

static int log_size(const char *log, size_t *size) {
    if (!size) return NULL_INPUT;
    *size = log[0] ? strlen(log) + 1 : 0;
    return OK;
}

int __nvJitLinkGetErrorLogSize_13_0(struct link *l, size_t *size) {
    if (!l) return NULL_INPUT;
    FAIL_POINT();
    return log_size(l->errlog, size);
}

int __nvJitLinkGetErrorLog_13_0(struct link *l, char *out) {
    if (!l || !out) return NULL_INPUT;
    FAIL_POINT();
    memcpy(out, l->errlog, strlen(l->errlog) + 1);
    return OK;
}

int __nvJitLinkGetInfoLogSize_13_0(struct link *l, size_t *size) {
    if (!l) return NULL_INPUT;
    FAIL_POINT();
    return log_size(l->infolog, size);
}

int __nvJitLinkGetInfoLog_13_0(struct link *l, char *out) {
    if (!l || !out) return NULL_INPUT;
    FAIL_POINT();
    memcpy(out, l->infolog, strlen(l->infolog) + 1);
    return OK;
}
