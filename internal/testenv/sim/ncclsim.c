/*
 * ncclsim.c: a CPU stand-in for the parts of NCCL that purecuda's package
 * nccl calls, for its tests without a GPU. It is a test fixture, not a
 * communication library: every rank's data goes through one hub, which
 * computes each rank's result, with NCCL's status codes and argument rules.
 *
 * Build (internal/testenv/nccl_linux.go does it), linked with the driver
 * simulator so that it shares that simulator's state (Linux only: the hub
 * listens on an abstract unix socket):
 *
 *     cc -O2 -shared -fPIC -pthread -o libncclsim.so ncclsim.c /path/libcudasim.so -lm
 *
 * What it models
 *   - ncclGetUniqueId starts a hub in the calling process (a listening
 *     abstract unix socket and a thread per connection) and writes its name
 *     and a random clique key into the id. Ranks in this process or in
 *     others on the machine connect to it: ncclCommInitRank (the id by
 *     value), ncclCommInitRankConfig, ncclCommInitRankScalable and
 *     ncclCommInitAll (which makes an id of its own). Init returns once every
 *     rank has joined; with config->blocking == 0 it returns ncclInProgress
 *     and joins on a thread, ncclCommGetAsyncError saying ncclInProgress
 *     until then.
 *   - Collectives (AllReduce, Broadcast, Bcast, Reduce, AllGather,
 *     ReduceScatter, AlltoAll, Gather, Scatter) and Send/Recv run in stream
 *     order as host functions (cuLaunchHostFunc) on the stream given, so
 *     they are captured into graphs like any other work: a call made during a
 *     capture keeps its task for the graph's launches. The simulator's device
 *     memory is host memory, so the task reads and writes the buffers. The
 *     hub matches the k-th collective of every rank of a clique, checks that
 *     they agree (kind, type, count, op, root), and answers each rank its
 *     result; a Send is kept at the hub until its Recv asks.
 *   - Every op and type of nccl.h: sums, products, max, min, average,
 *     PreMulSum (ncclRedOpCreatePreMulSum, host scalars), over the integer
 *     types, half, bfloat16, float, double and both FP8 formats (computed in
 *     double for the floating types, rounded to nearest even on the way
 *     back; in 64-bit integers for the integer ones).
 *   - Groups: a per-thread depth (NCCL's group state is per thread); a
 *     ncclGroupEnd on a thread with no group open is ncclInvalidUsage and is
 *     counted (stat "group_misuse").
 *   - ncclCommSplit (NCCL_SPLIT_NOCOLOR gives no communicator) and
 *     ncclCommShrink (the ranks left out take no part) through the hub.
 *   - Failures: a rank whose connection closes without ncclCommDestroy
 *     (its process died, or ncclCommAbort) fails its clique: every rank
 *     waiting in a collective, and every later one, gets ncclRemoteError,
 *     which ncclCommGetAsyncError then reports. ncclCommAbort closes the
 *     rank's connection, so a task of its own blocked at the hub returns.
 *   - ncclCommFinalize waits for the communicator's queued tasks; in the
 *     process that hosts the hub, ncclCommDestroy waits (10 s at most) for
 *     the ranks of other processes to leave, so that the hub outlives
 *     their last calls.
 *   - ncclGetLastError: the text of the last failure of the calling thread.
 *
 * Test hooks: long long ncclsim_stat(const char *name): "live_comms",
 * "inits", "destroys", "aborts", "collectives" (tasks run), "group_misuse",
 * "group_depth" (of the calling thread), "groups_open" (of every thread),
 * "enqueued" (calls that queued a task), "remote_errors"; -1 if unknown.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef struct CUstream_st *CUstream;
typedef struct CUctx_st *CUcontext;
typedef int CUdevice;
typedef void (*CUhostFn)(void *userData);
CUresult cuLaunchHostFunc(CUstream h, CUhostFn fn, void *user);
CUresult cuStreamIsCapturing(CUstream h, int *status);
CUresult cuCtxGetCurrent(CUcontext *pctx);
CUresult cuCtxGetDevice(CUdevice *dev);
CUresult cuDeviceGetCount(int *count);

typedef enum {
    ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2, ncclInternalError = 3,
    ncclInvalidArgument = 4, ncclInvalidUsage = 5, ncclRemoteError = 6, ncclInProgress = 7,
} ncclResult_t;
enum { ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg, ncclNumOps };
enum { T_I8, T_U8, T_I32, T_U32, T_I64, T_U64, T_F16, T_F32, T_F64, T_BF16, T_E4M3, T_E5M2, T_NUM };
#define UNIQUE_ID_BYTES 128
typedef struct { char internal[UNIQUE_ID_BYTES]; } ncclUniqueId;
typedef struct {
    size_t size;
    unsigned int magic, version;
    int blocking, cgaClusterSize, minCTAs, maxCTAs;
    const char *netName;
    int splitShare, trafficClass;
    const char *commName;
    int collnetEnable, CTAPolicy, shrinkShare, nvlsCTAs, nChannelsPerNetPeer, nvlinkCentricSched;
} ncclConfig_t;
#define CONFIG_MAGIC 0xcafebeef
#define UNDEF_INT INT32_MIN

static const int type_size[T_NUM] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

/* ==== counters and the thread's last error ==== */

static pthread_mutex_t stat_mu = PTHREAD_MUTEX_INITIALIZER;
static long long st_live, st_inits, st_destroys, st_aborts, st_collectives, st_group_misuse, st_remote_errors,
    st_groups_open, st_enqueued;
static __thread int group_depth;
static char last_error[256]; /* process-wide, as NCCL's */

static void bump(long long *c, int d) {
    pthread_mutex_lock(&stat_mu);
    *c += d;
    pthread_mutex_unlock(&stat_mu);
}

long long ncclsim_stat(const char *name) {
    long long v = -1;
    pthread_mutex_lock(&stat_mu);
    if (!strcmp(name, "live_comms")) v = st_live;
    else if (!strcmp(name, "inits")) v = st_inits;
    else if (!strcmp(name, "destroys")) v = st_destroys;
    else if (!strcmp(name, "aborts")) v = st_aborts;
    else if (!strcmp(name, "collectives")) v = st_collectives;
    else if (!strcmp(name, "group_misuse")) v = st_group_misuse;
    else if (!strcmp(name, "group_depth")) v = group_depth;
    else if (!strcmp(name, "remote_errors")) v = st_remote_errors;
    else if (!strcmp(name, "groups_open")) v = st_groups_open;
    else if (!strcmp(name, "enqueued")) v = st_enqueued;
    pthread_mutex_unlock(&stat_mu);
    return v;
}

static ncclResult_t fail(ncclResult_t r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return r;
}

/* ==== the wire: a header, then len bytes ==== */

enum { M_HELLO = 1, M_COLL, M_SEND, M_RECV, M_SPLIT, M_BYE, M_OK, M_ERR };
enum { K_ALLREDUCE = 1, K_BROADCAST, K_REDUCE, K_ALLGATHER, K_REDUCESCATTER, K_ALLTOALL, K_GATHER, K_SCATTER };

struct msg {
    uint32_t type, len;
    uint64_t key[2];   /* the clique (HELLO) */
    int32_t a[8];      /* HELLO: nranks, rank; COLL: kind, type, op, root, nranks; SEND/RECV: peer; SPLIT: color, key, nexcl, shrink; OK: ints back; ERR: result */
    uint64_t count;    /* COLL: elements of the op's unit */
    double scalar;     /* COLL: PreMulSum's scalar */
};

static int write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n > 0) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        c += w, n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t n) {
    char *c = p;
    while (n > 0) {
        ssize_t r = recv(fd, c, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        c += r, n -= (size_t)r;
    }
    return 0;
}

static int send_msg(int fd, struct msg *m, const void *data) {
    if (write_all(fd, m, sizeof *m) != 0) return -1;
    return m->len ? write_all(fd, data, m->len) : 0;
}

/* recv_msg reads a message; *data gets a malloc'd payload (NULL if none). */
static int recv_msg(int fd, struct msg *m, void **data) {
    *data = NULL;
    if (read_all(fd, m, sizeof *m) != 0) return -1;
    if (m->len > (1u << 30)) return -1;
    if (m->len) {
        *data = malloc(m->len);
        if (!*data || read_all(fd, *data, m->len) != 0) {
            free(*data);
            *data = NULL;
            return -1;
        }
    }
    return 0;
}

/* ==== element conversions ==== */

static double half_to(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 31, f = h & 1023;
    double v = e == 0 ? ldexp(f, -24) : e == 31 ? (f ? NAN : INFINITY) : ldexp(f + 1024, e - 25);
    return s ? -v : v;
}

/* to_minifloat rounds v to nearest even in a format of ebits exponent bits
 * and mbits mantissa bits with the given bias; satfinite: no infinities
 * (e4m3's largest finite value instead, and its NaN is all ones). */
static uint32_t to_minifloat(double v, int ebits, int mbits, int bias, int e4m3) {
    uint32_t sign = signbit(v) ? 1u << (ebits + mbits) : 0;
    int emax = (1 << ebits) - 1;
    if (isnan(v)) return sign | (e4m3 ? 0x7f : ((uint32_t)emax << mbits) | (1u << (mbits - 1)));
    v = fabs(v);
    double maxv = e4m3 ? 448.0 : ldexp(2.0 - ldexp(1, -mbits), emax - 1 - bias);
    if (v == 0) return sign;
    int e;
    frexp(v, &e); /* v = m * 2^e, m in [0.5,1) */
    int exp = e - 1 + bias;
    double q;
    if (exp <= 0) { /* subnormal: units of 2^(1-bias-mbits) */
        q = nearbyint(ldexp(v, bias - 1 + mbits));
        if (q >= (1 << mbits)) return sign | (1u << mbits); /* rounds up to the smallest normal */
        return sign | (uint32_t)q;
    }
    q = nearbyint(ldexp(v, mbits - (e - 1))); /* mantissa with the hidden bit, in [2^mbits, 2^(mbits+1)] */
    if (q >= (2 << mbits)) q /= 2, exp++;
    if (e4m3 ? v > maxv || exp > emax || (exp == emax && ((uint32_t)q & ((1u << mbits) - 1)) == ((1u << mbits) - 1)) : exp >= emax) {
        if (e4m3) return sign | 0x7e;                   /* satfinite: 448 */
        return sign | ((uint32_t)emax << mbits);        /* infinity */
    }
    return sign | ((uint32_t)exp << mbits) | ((uint32_t)q & ((1u << mbits) - 1));
}

static double from_minifloat(uint32_t b, int ebits, int mbits, int bias, int e4m3) {
    int s = (b >> (ebits + mbits)) & 1, e = (b >> mbits) & ((1 << ebits) - 1), f = b & ((1 << mbits) - 1);
    int emax = (1 << ebits) - 1;
    double v;
    if (e4m3 && e == emax && f == (1 << mbits) - 1) v = NAN;
    else if (!e4m3 && e == emax) v = f ? NAN : INFINITY;
    else if (e == 0) v = ldexp(f, 1 - bias - mbits);
    else v = ldexp(f + (1 << mbits), e - bias - mbits);
    return s ? -v : v;
}

static double get_f(const void *p, size_t i, int t) {
    switch (t) {
    case T_F16: return half_to(((const uint16_t *)p)[i]);
    case T_BF16: { uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16; float f; memcpy(&f, &u, 4); return f; }
    case T_F32: return ((const float *)p)[i];
    case T_F64: return ((const double *)p)[i];
    case T_E4M3: return from_minifloat(((const uint8_t *)p)[i], 4, 3, 7, 1);
    case T_E5M2: return from_minifloat(((const uint8_t *)p)[i], 5, 2, 15, 0);
    }
    return 0;
}

static void put_f(void *p, size_t i, int t, double v) {
    switch (t) {
    case T_F16: ((uint16_t *)p)[i] = (uint16_t)to_minifloat(v, 5, 10, 15, 0); break;
    case T_BF16: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        if (isnan(f)) u = 0x7fc00000;
        else u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
        ((uint16_t *)p)[i] = (uint16_t)(u >> 16);
        break;
    }
    case T_F32: ((float *)p)[i] = (float)v; break;
    case T_F64: ((double *)p)[i] = v; break;
    case T_E4M3: ((uint8_t *)p)[i] = (uint8_t)to_minifloat(v, 4, 3, 7, 1); break;
    case T_E5M2: ((uint8_t *)p)[i] = (uint8_t)to_minifloat(v, 5, 2, 15, 0); break;
    }
}

static int is_float(int t) { return t == T_F16 || t == T_BF16 || t == T_F32 || t == T_F64 || t == T_E4M3 || t == T_E5M2; }
static int is_signed(int t) { return t == T_I8 || t == T_I32 || t == T_I64; }

static int64_t get_i(const void *p, size_t i, int t) {
    switch (t) {
    case T_I8: return ((const int8_t *)p)[i];
    case T_U8: return ((const uint8_t *)p)[i];
    case T_I32: return ((const int32_t *)p)[i];
    case T_U32: return ((const uint32_t *)p)[i];
    case T_I64: return ((const int64_t *)p)[i];
    case T_U64: return (int64_t)((const uint64_t *)p)[i];
    }
    return 0;
}

static void put_i(void *p, size_t i, int t, int64_t v) {
    switch (t) {
    case T_I8: case T_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case T_I32: case T_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case T_I64: case T_U64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    }
}

/* reduce writes into out the reduction over n inputs (each count elements
 * from offset off) with op; scalars are PreMulSum's, one per input. The
 * floating types and PreMulSum go through double; the integer types through
 * 64-bit integers, wrapping as the type does. */
static void reduce(void *out, void **in, int n, size_t off, size_t count, int t, int op, const double *scalars) {
    for (size_t i = 0; i < count; i++) {
        if (is_float(t) || op >= ncclNumOps) {
            double acc = 0;
            for (int r = 0; r < n; r++) {
                int64_t iv = get_i(in[r], off + i, t);
                double x = is_float(t) ? get_f(in[r], off + i, t) : is_signed(t) ? (double)iv : (double)(uint64_t)iv;
                if (op >= ncclNumOps) x *= scalars[r];
                if (r == 0) acc = x;
                else switch (op) {
                    case ncclProd: acc *= x; break;
                    case ncclMax: acc = x > acc ? x : acc; break;
                    case ncclMin: acc = x < acc ? x : acc; break;
                    default: acc += x;
                    }
            }
            if (op == ncclAvg) acc /= n;
            if (is_float(t)) put_f(out, i, t, acc);
            else put_i(out, i, t, is_signed(t) ? (int64_t)acc : (int64_t)(uint64_t)acc);
            continue;
        }
        /* get_i sign-extends the signed types and zero-extends the others */
        int64_t acc = get_i(in[0], off + i, t);
        for (int r = 1; r < n; r++) {
            int64_t x = get_i(in[r], off + i, t);
            switch (op) {
            case ncclProd: acc = (int64_t)((uint64_t)acc * (uint64_t)x); break;
            case ncclMax: if (is_signed(t) ? x > acc : (uint64_t)x > (uint64_t)acc) acc = x; break;
            case ncclMin: if (is_signed(t) ? x < acc : (uint64_t)x < (uint64_t)acc) acc = x; break;
            default: acc = (int64_t)((uint64_t)acc + (uint64_t)x);
            }
        }
        if (op == ncclAvg) acc = is_signed(t) ? acc / n : (int64_t)((uint64_t)acc / (uint64_t)n);
        put_i(out, i, t, acc);
    }
}

/* ==== the hub ==== */

struct mail { struct mail *next; int src, dst; uint32_t len; void *data; };

struct clique {
    struct clique *next;
    uint64_t key[2];
    int nranks, joined, failed, started;
    int *present;      /* ranks joined (1), left cleanly (2) */
    int *remote;       /* ranks of another process than the hub's */
    /* the round of collectives in progress: the k-th of each rank */
    uint64_t round;    /* its number */
    int arrived;
    struct msg *in;    /* per rank */
    void **data;
    void **out;        /* per rank, once computed */
    uint32_t *outlen;
    int result;        /* of the round: ncclSuccess or an error */
    uint64_t done;     /* rounds completed */
    int *taken;        /* ranks that took the result of round done-1 */
    struct mail *mail;
    /* a split in progress */
    int split_arrived, split_need;
    int32_t *colors, *keys;
    int *split_in, *member; /* ranks in the split in progress, and in the last one */
    uint64_t split_keys[64][2];
};

static pthread_mutex_t hub_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hub_cv = PTHREAD_COND_INITIALIZER;
static struct clique *cliques;
static int hub_fd = -1;
static char hub_name[96];

static void random_key(uint64_t key[2]) {
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    key[0] = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)rand();
    key[1] = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) ^ ((uint64_t)ts.tv_sec << 20);
}

/* clique_locked finds or makes the clique of key. */
static struct clique *clique_locked(const uint64_t key[2], int nranks) {
    for (struct clique *c = cliques; c; c = c->next)
        if (c->key[0] == key[0] && c->key[1] == key[1]) return c;
    if (nranks <= 0 || nranks > 64) return NULL;
    struct clique *c = calloc(1, sizeof *c);
    c->key[0] = key[0], c->key[1] = key[1];
    c->nranks = nranks;
    c->present = calloc((size_t)nranks, sizeof(int));
    c->remote = calloc((size_t)nranks, sizeof(int));
    c->in = calloc((size_t)nranks, sizeof(struct msg));
    c->data = calloc((size_t)nranks, sizeof(void *));
    c->out = calloc((size_t)nranks, sizeof(void *));
    c->outlen = calloc((size_t)nranks, sizeof(uint32_t));
    c->taken = calloc((size_t)nranks, sizeof(int));
    c->colors = calloc((size_t)nranks, sizeof(int32_t));
    c->keys = calloc((size_t)nranks, sizeof(int32_t));
    c->split_in = calloc((size_t)nranks, sizeof(int));
    c->member = calloc((size_t)nranks, sizeof(int));
    c->next = cliques;
    cliques = c;
    return c;
}

/* compute_locked works out every rank's result of the round whose inputs
 * have all arrived. */
static void compute_locked(struct clique *c) {
    int n = c->nranks;
    struct msg *m0 = &c->in[0];
    c->result = ncclSuccess;
    for (int r = 0; r < n; r++) {
        struct msg *m = &c->in[r];
        if (m->a[0] != m0->a[0] || m->a[1] != m0->a[1] || m->a[2] != m0->a[2] || m->a[3] != m0->a[3] ||
            m->count != m0->count) {
            c->result = ncclInvalidUsage;
            return;
        }
    }
    int kind = m0->a[0], t = m0->a[1], op = m0->a[2], root = m0->a[3];
    size_t count = m0->count, es = (size_t)type_size[t], unit = count * es;
    double scalars[64];
    for (int r = 0; r < n; r++) scalars[r] = c->in[r].scalar;
    for (int r = 0; r < n; r++) {
        void *out = NULL;
        size_t len = 0;
        switch (kind) {
        case K_ALLREDUCE:
            len = unit, out = malloc(len + 1);
            reduce(out, c->data, n, 0, count, t, op, scalars);
            break;
        case K_REDUCE:
            if (r == root) len = unit, out = malloc(len + 1), reduce(out, c->data, n, 0, count, t, op, scalars);
            break;
        case K_BROADCAST:
            len = unit, out = malloc(len + 1), memcpy(out, c->data[root], len);
            break;
        case K_ALLGATHER:
            len = unit * (size_t)n, out = malloc(len + 1);
            for (int s = 0; s < n; s++) memcpy((char *)out + (size_t)s * unit, c->data[s], unit);
            break;
        case K_REDUCESCATTER:
            len = unit, out = malloc(len + 1);
            reduce(out, c->data, n, (size_t)r * count, count, t, op, scalars);
            break;
        case K_ALLTOALL:
            len = unit * (size_t)n, out = malloc(len + 1);
            for (int s = 0; s < n; s++) memcpy((char *)out + (size_t)s * unit, (char *)c->data[s] + (size_t)r * unit, unit);
            break;
        case K_GATHER:
            if (r == root) {
                len = unit * (size_t)n, out = malloc(len + 1);
                for (int s = 0; s < n; s++) memcpy((char *)out + (size_t)s * unit, c->data[s], unit);
            }
            break;
        case K_SCATTER:
            len = unit, out = malloc(len + 1), memcpy(out, (char *)c->data[root] + (size_t)r * unit, unit);
            break;
        default:
            c->result = ncclInvalidUsage;
        }
        c->out[r] = out, c->outlen[r] = (uint32_t)len;
    }
}

static void reply_err(int fd, int result) {
    struct msg m = {.type = M_ERR};
    m.a[0] = result;
    send_msg(fd, &m, NULL);
}

/* fail_locked fails the clique: every waiter and every later call gets
 * ncclRemoteError. */
static void fail_locked(struct clique *c) {
    if (!c->failed) c->failed = 1;
    pthread_cond_broadcast(&hub_cv);
}

/* hub_wait waits on hub_cv (hub_mu held) for a little while, then looks
 * at the waiting rank's connection: a rank that hung up (died, aborted)
 * while it waited fails the clique. It returns -1 then. */
static int hub_wait(struct clique *c, int fd) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 2000000;
    if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
    pthread_cond_timedwait(&hub_cv, &hub_mu, &ts);
    char b;
    ssize_t r = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        fail_locked(c);
        return -1;
    }
    return 0;
}

struct conn { int fd; };

static void *serve(void *arg) {
    int fd = ((struct conn *)arg)->fd;
    free(arg);
    struct clique *c = NULL;
    int rank = -1, bye = 0;
    uint64_t mine = 0; /* this rank's next round */
    for (;;) {
        struct msg m;
        void *data;
        if (recv_msg(fd, &m, &data) != 0) break;
        pthread_mutex_lock(&hub_mu);
        if (m.type == M_HELLO) {
            c = clique_locked(m.key, m.a[0]);
            rank = m.a[1];
            if (!c || c->nranks != m.a[0] || rank < 0 || rank >= c->nranks || c->present[rank] || c->started) {
                pthread_mutex_unlock(&hub_mu);
                reply_err(fd, ncclInvalidArgument);
                c = NULL;
                break;
            }
            c->present[rank] = 1;
            struct ucred cred;
            socklen_t clen = sizeof cred;
            c->remote[rank] = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 && cred.pid != getpid();
            c->joined++;
            pthread_cond_broadcast(&hub_cv);
            while (c->joined < c->nranks && !c->failed && hub_wait(c, fd) == 0) {}
            c->started = 1;
            int failed = c->joined < c->nranks; /* once all came, init succeeded, whatever came next */
            pthread_mutex_unlock(&hub_mu);
            if (failed) reply_err(fd, ncclRemoteError);
            else {
                struct msg ok = {.type = M_OK};
                send_msg(fd, &ok, NULL);
            }
            continue;
        }
        if (!c) {
            pthread_mutex_unlock(&hub_mu);
            free(data);
            break;
        }
        if (m.type == M_BYE) {
            c->present[rank] = 2;
            bye = 1;
            pthread_mutex_unlock(&hub_mu);
            break;
        }
        if (c->failed) {
            pthread_mutex_unlock(&hub_mu);
            free(data);
            reply_err(fd, ncclRemoteError);
            continue;
        }
        if (m.type == M_SEND) {
            struct mail *ml = calloc(1, sizeof *ml), **tail = &c->mail;
            ml->src = rank, ml->dst = m.a[0], ml->len = m.len, ml->data = data;
            while (*tail) tail = &(*tail)->next;
            *tail = ml;
            pthread_cond_broadcast(&hub_cv);
            pthread_mutex_unlock(&hub_mu);
            struct msg ok = {.type = M_OK};
            send_msg(fd, &ok, NULL);
            continue;
        }
        if (m.type == M_RECV) {
            struct mail *got = NULL;
            for (;;) {
                for (struct mail **p = &c->mail; *p; p = &(*p)->next)
                    if ((*p)->src == m.a[0] && (*p)->dst == rank) {
                        got = *p;
                        *p = got->next;
                        break;
                    }
                if (got || c->failed || hub_wait(c, fd) != 0) break;
            }
            pthread_mutex_unlock(&hub_mu);
            if (!got) reply_err(fd, ncclRemoteError);
            else if (got->len != m.count) reply_err(fd, ncclInvalidUsage);
            else {
                struct msg ok = {.type = M_OK, .len = got->len};
                send_msg(fd, &ok, got->data);
            }
            if (got) free(got->data), free(got);
            continue;
        }
        if (m.type == M_SPLIT) {
            /* a[0] color, a[1] key, a[2] ranks taking part */
            c->colors[rank] = m.a[0], c->keys[rank] = m.a[1], c->split_in[rank] = 1;
            if (c->split_arrived == 0) c->split_need = m.a[2];
            uint64_t gen = c->done;
            c->split_arrived++;
            if (c->split_arrived == c->split_need) {
                for (int r = 0; r < c->nranks; r++) random_key(c->split_keys[r]);
                /* one key per color: that of its first rank */
                for (int r = 0; r < c->nranks; r++)
                    for (int s = 0; s < r; s++)
                        if (c->colors[s] == c->colors[r]) {
                            c->split_keys[r][0] = c->split_keys[s][0], c->split_keys[r][1] = c->split_keys[s][1];
                            break;
                        }
                for (int r = 0; r < c->nranks; r++) c->member[r] = c->split_in[r], c->split_in[r] = 0;
                c->done++;
                c->split_arrived = 0;
                pthread_cond_broadcast(&hub_cv);
            }
            while (c->done == gen && !c->failed && hub_wait(c, fd) == 0) {}
            if (c->done == gen) {
                pthread_mutex_unlock(&hub_mu);
                reply_err(fd, ncclRemoteError);
                continue;
            }
            struct msg ok = {.type = M_OK};
            int newrank = 0, size = 0;
            for (int r = 0; r < c->nranks; r++) {
                if (!c->member[r] || c->colors[r] != m.a[0] || c->colors[r] < 0) continue;
                size++;
                if (c->keys[r] < m.a[1] || (c->keys[r] == m.a[1] && r < rank)) newrank++;
            }
            ok.a[0] = newrank, ok.a[1] = size;
            ok.key[0] = c->split_keys[rank][0], ok.key[1] = c->split_keys[rank][1];
            pthread_mutex_unlock(&hub_mu);
            send_msg(fd, &ok, NULL);
            continue;
        }
        if (m.type != M_COLL) {
            pthread_mutex_unlock(&hub_mu);
            free(data);
            reply_err(fd, ncclInternalError);
            continue;
        }
        /* a collective: wait for the round before ours to be taken by all */
        uint64_t my = mine++;
        while (c->round != my && !c->failed && hub_wait(c, fd) == 0) {}
        if (c->failed) {
            pthread_mutex_unlock(&hub_mu);
            free(data);
            reply_err(fd, ncclRemoteError);
            continue;
        }
        c->in[rank] = m;
        c->data[rank] = data;
        if (++c->arrived == c->nranks) {
            compute_locked(c);
            c->arrived = -c->nranks; /* counts up to 0 as results are taken */
            pthread_cond_broadcast(&hub_cv);
        }
        while (c->arrived > 0 && !c->failed && hub_wait(c, fd) == 0) {}
        if (c->arrived > 0) { /* failed before every rank came */
            pthread_mutex_unlock(&hub_mu);
            reply_err(fd, ncclRemoteError);
            continue;
        }
        void *out = c->out[rank];
        uint32_t len = c->outlen[rank];
        int result = c->result;
        c->out[rank] = NULL;
        free(c->data[rank]);
        c->data[rank] = NULL;
        if (++c->arrived == 0) {
            c->round++;
            pthread_cond_broadcast(&hub_cv);
        }
        pthread_mutex_unlock(&hub_mu);
        if (result != ncclSuccess) reply_err(fd, result);
        else {
            struct msg ok = {.type = M_OK, .len = len};
            send_msg(fd, &ok, out);
        }
        free(out);
    }
    pthread_mutex_lock(&hub_mu);
    if (c && !bye) {
        c->present[rank] = 0;
        fail_locked(c);
    }
    pthread_mutex_unlock(&hub_mu);
    close(fd);
    return NULL;
}

static void *accept_loop(void *arg) {
    (void)arg;
    for (;;) {
        int fd = accept(hub_fd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return NULL;
        }
        struct conn *cn = malloc(sizeof *cn);
        cn->fd = fd;
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&th, &at, serve, cn) != 0) close(fd), free(cn);
        pthread_attr_destroy(&at);
    }
}

static pthread_once_t hub_once = PTHREAD_ONCE_INIT;
static int hub_err;

static void start_hub(void) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(hub_name, sizeof hub_name, "purecuda-ncclsim-%d-%ld", (int)getpid(), (long)time(NULL));
    memcpy(a.sun_path + 1, hub_name, strlen(hub_name));
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(hub_name));
    hub_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (hub_fd < 0 || bind(hub_fd, (struct sockaddr *)&a, alen) != 0 || listen(hub_fd, 128) != 0) {
        hub_err = errno;
        return;
    }
    pthread_t th;
    if (pthread_create(&th, NULL, accept_loop, NULL) != 0) hub_err = EAGAIN;
    else pthread_detach(th);
}

/* The id: "NCCLSIM1", the clique key, the hub's name. */
struct id { char magic[8]; uint64_t key[2]; char name[96]; };

/* ==== communicators ==== */

enum { COMM_MAGIC = 0x4e63636c, COMM_DEAD = 0 };

struct comm {
    int magic;
    int rank, nranks, dev, blocking;
    int fd;
    pthread_mutex_t mu;      /* one exchange with the hub at a time */
    volatile int async;      /* ncclCommGetAsyncError's answer */
    volatile int aborted;
    struct id id;
    int pending;             /* tasks queued and not run yet (atomic) */
    double scalars[64];      /* PreMulSum ops: ncclNumOps + i */
    int nops;
    char hub[96];
};

static ncclResult_t check_comm(struct comm *c) {
    if (!c || c->magic != COMM_MAGIC) return fail(ncclInvalidArgument, "invalid communicator");
    if (c->aborted) return fail(ncclInvalidUsage, "the communicator was aborted");
    if (c->async != ncclSuccess) {
        if (c->async == ncclInProgress) return fail(ncclInvalidUsage, "the communicator is not ready (ncclInProgress)");
        return fail((ncclResult_t)c->async, "the communicator has failed: a peer left or an error occurred");
    }
    return ncclSuccess;
}

static int dial(const char *name) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strnlen(name, 95);
    memcpy(a.sun_path + 1, name, n);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* join connects c to its clique's hub and waits for every rank. */
static ncclResult_t join(struct comm *c) {
    c->fd = dial(c->id.name);
    if (c->fd < 0) return fail(ncclSystemError, "cannot reach the hub %s: %s", c->id.name, strerror(errno));
    struct msg m = {.type = M_HELLO};
    m.key[0] = c->id.key[0], m.key[1] = c->id.key[1];
    m.a[0] = c->nranks, m.a[1] = c->rank;
    void *data;
    if (send_msg(c->fd, &m, NULL) != 0 || recv_msg(c->fd, &m, &data) != 0) return fail(ncclRemoteError, "the hub closed the connection during init");
    free(data);
    if (m.type != M_OK) return fail((ncclResult_t)m.a[0], "init refused: rank %d of %d (a duplicate rank or a wrong number of ranks)", c->rank, c->nranks);
    return ncclSuccess;
}

static void *join_later(void *arg) {
    struct comm *c = arg;
    ncclResult_t r = join(c);
    __atomic_store_n(&c->async, r, __ATOMIC_RELEASE);
    return NULL;
}

static int current_device(int *dev) {
    CUcontext ctx = NULL;
    if (cuCtxGetCurrent(&ctx) != 0 || !ctx) return -1;
    return cuCtxGetDevice(dev) == 0 ? 0 : -1;
}

static ncclResult_t init_rank(struct comm **out, int nranks, const ncclUniqueId *id, int rank, const ncclConfig_t *config, int dev) {
    if (!out) return fail(ncclInvalidArgument, "comm is NULL");
    *out = NULL;
    if (nranks < 1 || nranks > 64 || rank < 0 || rank >= nranks) return fail(ncclInvalidArgument, "rank %d of %d", rank, nranks);
    const struct id *sid = (const struct id *)id->internal;
    if (memcmp(sid->magic, "NCCLSIM1", 8) != 0) return fail(ncclInvalidArgument, "not a unique id of this library");
    if (config && (config->magic != CONFIG_MAGIC || config->size < sizeof(ncclConfig_t)))
        return fail(ncclInvalidArgument, "config not made by NCCL_CONFIG_INITIALIZER");
    if (dev < 0 && current_device(&dev) != 0) return fail(ncclUnhandledCudaError, "no current CUDA context");
    struct comm *c = calloc(1, sizeof *c);
    c->magic = COMM_MAGIC, c->rank = rank, c->nranks = nranks, c->dev = dev, c->fd = -1;
    c->blocking = !(config && config->blocking == 0);
    c->id = *sid;
    pthread_mutex_init(&c->mu, NULL);
    bump(&st_inits, 1);
    bump(&st_live, 1);
    *out = c;
    if (!c->blocking) {
        c->async = ncclInProgress;
        pthread_t th;
        pthread_create(&th, NULL, join_later, c);
        pthread_detach(th);
        return ncclInProgress;
    }
    ncclResult_t r = join(c);
    c->async = r;
    return r;
}

ncclResult_t ncclGetVersion(int *version) {
    if (!version) return fail(ncclInvalidArgument, "version is NULL");
    *version = 22809;
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *uid) {
    if (!uid) return fail(ncclInvalidArgument, "uniqueId is NULL");
    pthread_once(&hub_once, start_hub);
    if (hub_err) return fail(ncclSystemError, "cannot start the hub: %s", strerror(hub_err));
    memset(uid, 0, sizeof *uid);
    struct id *id = (struct id *)uid->internal;
    memcpy(id->magic, "NCCLSIM1", 8);
    random_key(id->key);
    snprintf(id->name, sizeof id->name, "%s", hub_name);
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(struct comm **comm, int nranks, ncclUniqueId commId, int rank) {
    return init_rank(comm, nranks, &commId, rank, NULL, -1);
}

ncclResult_t ncclCommInitRankConfig(struct comm **comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config) {
    return init_rank(comm, nranks, &commId, rank, config, -1);
}

ncclResult_t ncclCommInitRankScalable(struct comm **comm, int nranks, int myrank, int nId, ncclUniqueId *commIds, ncclConfig_t *config) {
    if (nId < 1 || !commIds) return fail(ncclInvalidArgument, "nId %d", nId);
    return init_rank(comm, nranks, &commIds[0], myrank, config, -1);
}

struct init_arg { struct comm **out; int n, rank, dev; ncclUniqueId id; ncclResult_t r; };

static void *init_one(void *p) {
    struct init_arg *a = p;
    a->r = init_rank(a->out, a->n, &a->id, a->rank, NULL, a->dev);
    return NULL;
}

ncclResult_t ncclCommInitAll(struct comm **comms, int ndev, const int *devlist) {
    if (!comms || ndev < 1 || ndev > 64) return fail(ncclInvalidArgument, "ndev %d", ndev);
    int count = 0;
    cuDeviceGetCount(&count);
    for (int i = 0; i < ndev; i++) {
        int d = devlist ? devlist[i] : i;
        if (d < 0 || d >= count) return fail(ncclInvalidArgument, "device %d of %d", d, count);
    }
    ncclUniqueId id;
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) return r;
    struct init_arg *args = calloc((size_t)ndev, sizeof *args);
    pthread_t *th = calloc((size_t)ndev, sizeof *th);
    for (int i = 0; i < ndev; i++) {
        args[i] = (struct init_arg){.out = &comms[i], .n = ndev, .rank = i, .dev = devlist ? devlist[i] : i, .id = id};
        pthread_create(&th[i], NULL, init_one, &args[i]);
    }
    r = ncclSuccess;
    for (int i = 0; i < ndev; i++) {
        pthread_join(th[i], NULL);
        if (args[i].r != ncclSuccess) r = args[i].r;
    }
    free(args), free(th);
    return r;
}

static void hangup(struct comm *c, int bye) {
    if (c->fd >= 0) {
        /* the goodbye, unless a task holds the connection (blocked at the
         * hub): then the hub sees the rank leave as a failure */
        int locked = 0;
        for (int i = 0; bye && i < 100 && !(locked = pthread_mutex_trylock(&c->mu) == 0); i++) usleep(1000);
        if (locked) {
            struct msg m = {.type = M_BYE};
            send_msg(c->fd, &m, NULL);
            pthread_mutex_unlock(&c->mu);
        }
        shutdown(c->fd, SHUT_RDWR);
    }
}

/* drain waits until the tasks c queued have run (or c failed). */
static void drain(struct comm *c) {
    while (__atomic_load_n(&c->pending, __ATOMIC_ACQUIRE) > 0 && !c->aborted) usleep(500);
}

static void *finalize_later(void *arg) {
    struct comm *c = arg;
    drain(c);
    int r = c->aborted ? ncclRemoteError : ncclSuccess;
    __atomic_compare_exchange_n(&c->async, &(int){ncclInProgress}, r, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    return NULL;
}

/* ncclCommFinalize waits for the communicator's queued work; a
 * non-blocking one returns ncclInProgress and does it on a thread. */
ncclResult_t ncclCommFinalize(struct comm *c) {
    ncclResult_t r = check_comm(c);
    if (r != ncclSuccess) return r;
    if (!c->blocking) {
        c->async = ncclInProgress;
        pthread_t th;
        pthread_create(&th, NULL, finalize_later, c);
        pthread_detach(th);
        return ncclInProgress;
    }
    drain(c);
    return ncclSuccess;
}

/* outlive_peers: in the hub's process, a rank leaving waits (10 s at most)
 * until the ranks of other processes have left the clique, so that the
 * hub serves their last calls. */
static void outlive_peers(struct comm *c) {
    if (strcmp(c->id.name, hub_name) != 0) return;
    pthread_mutex_lock(&hub_mu);
    struct clique *q = NULL;
    for (struct clique *k = cliques; k; k = k->next)
        if (k->key[0] == c->id.key[0] && k->key[1] == c->id.key[1]) q = k;
    for (int i = 0; q && i < 5000; i++) {
        int waiting = 0;
        for (int r = 0; r < q->nranks; r++) waiting |= r != c->rank && q->remote[r] && q->present[r] == 1;
        if (!waiting || q->failed) break;
        pthread_mutex_unlock(&hub_mu);
        usleep(2000);
        pthread_mutex_lock(&hub_mu);
    }
    pthread_mutex_unlock(&hub_mu);
}

static ncclResult_t release(struct comm *c, int bye) {
    if (!c || c->magic != COMM_MAGIC) return fail(ncclInvalidArgument, "invalid communicator");
    /* a non-blocking init still joining: it owns c until it is done */
    while (__atomic_load_n(&c->async, __ATOMIC_ACQUIRE) == ncclInProgress) {
        if (!bye && c->fd >= 0) shutdown(c->fd, SHUT_RDWR);
        usleep(1000);
    }
    if (bye) outlive_peers(c);
    hangup(c, bye);
    c->magic = COMM_DEAD;
    /* c's memory is not freed: tasks of a captured graph may still name it */
    bump(&st_live, -1);
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(struct comm *c) {
    ncclResult_t r = release(c, 1);
    if (r == ncclSuccess) bump(&st_destroys, 1);
    return r;
}

ncclResult_t ncclCommAbort(struct comm *c) {
    if (!c) return ncclSuccess;
    if (c->magic != COMM_MAGIC) return fail(ncclInvalidArgument, "invalid communicator");
    c->aborted = 1;
    if (c->fd >= 0) shutdown(c->fd, SHUT_RDWR);
    bump(&st_aborts, 1);
    return release(c, 0);
}

ncclResult_t ncclCommRevoke(struct comm *c, int flags) {
    if (!c || c->magic != COMM_MAGIC) return fail(ncclInvalidArgument, "invalid communicator");
    if (flags != 0) return fail(ncclInvalidArgument, "revokeFlags must be 0");
    c->aborted = 1;
    if (c->fd >= 0) shutdown(c->fd, SHUT_RDWR);
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(struct comm *c, ncclResult_t *err) {
    if (!c || c->magic != COMM_MAGIC || !err) return fail(ncclInvalidArgument, "invalid communicator or asyncError");
    *err = (ncclResult_t)__atomic_load_n(&c->async, __ATOMIC_ACQUIRE);
    if (c->aborted && *err == ncclSuccess) *err = ncclRemoteError;
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const struct comm *c, int *count) {
    if (!c || c->magic != COMM_MAGIC || !count) return fail(ncclInvalidArgument, "invalid communicator or count");
    *count = c->nranks;
    return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const struct comm *c, int *dev) {
    if (!c || c->magic != COMM_MAGIC || !dev) return fail(ncclInvalidArgument, "invalid communicator or device");
    *dev = c->dev;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const struct comm *c, int *rank) {
    if (!c || c->magic != COMM_MAGIC || !rank) return fail(ncclInvalidArgument, "invalid communicator or rank");
    *rank = c->rank;
    return ncclSuccess;
}

static const char *const names[] = {"no error", "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
                                    "unhandled system error (run with NCCL_DEBUG=INFO for details)",
                                    "internal error - please report this issue to the NCCL developers",
                                    "invalid argument (run with NCCL_DEBUG=WARN for details)",
                                    "invalid usage (run with NCCL_DEBUG=WARN for details)",
                                    "remote process exited or there was a network error", "NCCL operation in progress"};

const char *ncclGetErrorString(ncclResult_t r) {
    return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : "unknown result code";
}

const char *ncclGetLastError(struct comm *c) {
    (void)c;
    return last_error;
}

/* ==== split and shrink ==== */

/* exchange sends m (with data) to the hub and reads the answer. */
static ncclResult_t exchange(struct comm *c, struct msg *m, const void *data, struct msg *reply, void **rdata) {
    pthread_mutex_lock(&c->mu);
    int bad = send_msg(c->fd, m, data) != 0 || recv_msg(c->fd, reply, rdata) != 0;
    pthread_mutex_unlock(&c->mu);
    if (bad) {
        if (!c->aborted) {
            __atomic_store_n(&c->async, ncclRemoteError, __ATOMIC_RELEASE);
            bump(&st_remote_errors, 1);
        }
        return fail(ncclRemoteError, "the connection to the hub was lost (a peer left, or the communicator was aborted)");
    }
    if (reply->type == M_ERR) {
        /* the communicator is broken from here on, as after NCCL's asynchronous errors */
        __atomic_store_n(&c->async, reply->a[0], __ATOMIC_RELEASE);
        if (reply->a[0] == ncclRemoteError) bump(&st_remote_errors, 1);
        return fail((ncclResult_t)reply->a[0], "the collective failed: %s", ncclGetErrorString((ncclResult_t)reply->a[0]));
    }
    return ncclSuccess;
}

static ncclResult_t split(struct comm *c, int color, int key, struct comm **newcomm, ncclConfig_t *config, int need) {
    struct msg m = {.type = M_SPLIT}, reply;
    m.a[0] = color, m.a[1] = key, m.a[2] = need;
    void *data = NULL;
    ncclResult_t r = exchange(c, &m, NULL, &reply, &data);
    free(data);
    if (r != ncclSuccess) return r;
    if (color < 0) return ncclSuccess;
    ncclUniqueId id = {{0}};
    struct id *sid = (struct id *)id.internal;
    *sid = c->id;
    sid->key[0] = reply.key[0], sid->key[1] = reply.key[1];
    return init_rank(newcomm, reply.a[1], &id, reply.a[0], config, c->dev);
}

ncclResult_t ncclCommSplit(struct comm *c, int color, int key, struct comm **newcomm, ncclConfig_t *config) {
    ncclResult_t r = check_comm(c);
    if (r != ncclSuccess) return r;
    if (!newcomm) return fail(ncclInvalidArgument, "newcomm is NULL");
    *newcomm = NULL;
    if (color < -1) return fail(ncclInvalidArgument, "color %d", color);
    return split(c, color, key, newcomm, config, c->nranks);
}

ncclResult_t ncclCommShrink(struct comm *c, int *exclude, int nexclude, struct comm **newcomm, ncclConfig_t *config, int flags) {
    ncclResult_t r = check_comm(c);
    if (r != ncclSuccess) return r;
    if (!newcomm || (nexclude > 0 && !exclude) || nexclude < 0 || nexclude >= c->nranks || (flags & ~1))
        return fail(ncclInvalidArgument, "bad shrink arguments");
    *newcomm = NULL;
    for (int i = 0; i < nexclude; i++)
        if (exclude[i] < 0 || exclude[i] >= c->nranks || exclude[i] == c->rank)
            return fail(ncclInvalidArgument, "excluded rank %d", exclude[i]);
    return split(c, 0, c->rank, newcomm, config, c->nranks - nexclude);
}

/* ==== collectives ==== */

struct task {
    struct comm *c;
    int msg_type, kind, type, op, root, peer, keep;
    size_t count;       /* elements of the op's unit */
    const void *send;
    size_t send_bytes;
    void *recv;
    size_t recv_bytes;
    double scalar;
};

static void run(void *arg) {
    struct task *t = arg;
    struct comm *c = t->c;
    bump(&st_collectives, 1);
    if (c->magic == COMM_MAGIC && !c->aborted && c->async == ncclSuccess) {
        struct msg m = {.type = (uint32_t)t->msg_type, .len = (uint32_t)t->send_bytes}, reply;
        m.a[0] = t->msg_type == M_COLL ? t->kind : t->peer;
        m.a[1] = t->type, m.a[2] = t->op, m.a[3] = t->root;
        m.count = t->msg_type == M_RECV ? t->recv_bytes : t->count;
        m.scalar = t->scalar;
        void *data = NULL;
        if (exchange(c, &m, t->send_bytes ? t->send : NULL, &reply, &data) == ncclSuccess && data && t->recv &&
            reply.len <= t->recv_bytes)
            memmove(t->recv, data, reply.len);
        free(data);
    }
    if (!t->keep) {
        __atomic_sub_fetch(&c->pending, 1, __ATOMIC_RELEASE);
        free(t);
    }
}

static ncclResult_t enqueue(struct task *t, CUstream s) {
    int status = 0;
    if (cuStreamIsCapturing(s, &status) == 0 && status != 0) t->keep = 1;
    if (!t->keep) __atomic_add_fetch(&t->c->pending, 1, __ATOMIC_RELEASE);
    if (cuLaunchHostFunc(s, run, t) != 0) {
        if (!t->keep) __atomic_sub_fetch(&t->c->pending, 1, __ATOMIC_RELEASE);
        free(t);
        return fail(ncclUnhandledCudaError, "cuLaunchHostFunc failed");
    }
    bump(&st_enqueued, 1);
    return ncclSuccess;
}

static ncclResult_t coll(int kind, const void *send, void *recv, size_t count, int type, int op, int root,
                         struct comm *c, CUstream s) {
    ncclResult_t r = check_comm(c);
    if (r != ncclSuccess) return r;
    if (type < 0 || type >= T_NUM) return fail(ncclInvalidArgument, "invalid data type %d", type);
    int reducing = kind == K_ALLREDUCE || kind == K_REDUCE || kind == K_REDUCESCATTER;
    if (reducing && (op < 0 || op >= ncclNumOps + c->nops)) return fail(ncclInvalidArgument, "invalid reduction op %d", op);
    if ((kind == K_BROADCAST || kind == K_REDUCE || kind == K_GATHER || kind == K_SCATTER) && (root < 0 || root >= c->nranks))
        return fail(ncclInvalidArgument, "invalid root %d", root);
    size_t es = (size_t)type_size[type], n = (size_t)c->nranks, sb = count * es, rb = count * es;
    switch (kind) {
    case K_ALLGATHER: rb *= n; break;
    case K_REDUCESCATTER: sb *= n; break;
    case K_ALLTOALL: sb *= n, rb *= n; break;
    case K_GATHER: rb = c->rank == root ? rb * n : 0; break;
    case K_SCATTER: sb = c->rank == root ? sb * n : 0; break;
    case K_REDUCE: rb = c->rank == root ? rb : 0; break;
    case K_BROADCAST: sb = c->rank == root ? sb : 0; break;
    }
    if (count > 0 && ((sb && !send) || (rb && !recv))) return fail(ncclInvalidArgument, "a NULL buffer");
    struct task *t = calloc(1, sizeof *t);
    *t = (struct task){.c = c, .msg_type = M_COLL, .kind = kind, .type = type, .op = op, .root = root, .count = count,
                       .send = send, .send_bytes = sb, .recv = recv, .recv_bytes = rb,
                       .scalar = op >= ncclNumOps ? c->scalars[op - ncclNumOps] : 1};
    return enqueue(t, s);
}

ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, int t, int op, struct comm *c, CUstream st) {
    return coll(K_ALLREDUCE, s, r, n, t, op, 0, c, st);
}
ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, int t, int root, struct comm *c, CUstream st) {
    return coll(K_BROADCAST, s, r, n, t, 0, root, c, st);
}
ncclResult_t ncclBcast(void *b, size_t n, int t, int root, struct comm *c, CUstream st) {
    return coll(K_BROADCAST, b, b, n, t, 0, root, c, st);
}
ncclResult_t ncclReduce(const void *s, void *r, size_t n, int t, int op, int root, struct comm *c, CUstream st) {
    return coll(K_REDUCE, s, r, n, t, op, root, c, st);
}
ncclResult_t ncclAllGather(const void *s, void *r, size_t n, int t, struct comm *c, CUstream st) {
    return coll(K_ALLGATHER, s, r, n, t, 0, 0, c, st);
}
ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, struct comm *c, CUstream st) {
    return coll(K_REDUCESCATTER, s, r, n, t, op, 0, c, st);
}
ncclResult_t ncclAlltoAll(const void *s, void *r, size_t n, int t, struct comm *c, CUstream st) {
    return coll(K_ALLTOALL, s, r, n, t, 0, 0, c, st);
}
ncclResult_t ncclGather(const void *s, void *r, size_t n, int t, int root, struct comm *c, CUstream st) {
    return coll(K_GATHER, s, r, n, t, 0, root, c, st);
}
ncclResult_t ncclScatter(const void *s, void *r, size_t n, int t, int root, struct comm *c, CUstream st) {
    return coll(K_SCATTER, s, r, n, t, 0, root, c, st);
}

static ncclResult_t p2p(int type_msg, const void *send, void *recv, size_t count, int type, int peer, struct comm *c, CUstream s) {
    ncclResult_t r = check_comm(c);
    if (r != ncclSuccess) return r;
    if (type < 0 || type >= T_NUM) return fail(ncclInvalidArgument, "invalid data type %d", type);
    if (peer < 0 || peer >= c->nranks) return fail(ncclInvalidArgument, "invalid peer %d", peer);
    size_t bytes = count * (size_t)type_size[type];
    if (count > 0 && !(send || recv)) return fail(ncclInvalidArgument, "a NULL buffer");
    struct task *t = calloc(1, sizeof *t);
    *t = (struct task){.c = c, .msg_type = type_msg, .type = type, .peer = peer, .count = count};
    if (type_msg == M_SEND) t->send = send, t->send_bytes = bytes;
    else t->recv = recv, t->recv_bytes = bytes;
    return enqueue(t, s);
}

ncclResult_t ncclSend(const void *s, size_t n, int t, int peer, struct comm *c, CUstream st) {
    return p2p(M_SEND, s, NULL, n, t, peer, c, st);
}
ncclResult_t ncclRecv(void *r, size_t n, int t, int peer, struct comm *c, CUstream st) {
    return p2p(M_RECV, NULL, r, n, t, peer, c, st);
}

/* ==== groups and ops ==== */

ncclResult_t ncclGroupStart(void) {
    group_depth++;
    bump(&st_groups_open, 1);
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
    if (group_depth == 0) {
        bump(&st_group_misuse, 1);
        return fail(ncclInvalidUsage, "ncclGroupEnd: no group is open on this thread");
    }
    group_depth--;
    bump(&st_groups_open, -1);
    return ncclSuccess;
}

ncclResult_t ncclRedOpCreatePreMulSum(int *op, void *scalar, int type, int residence, struct comm *c) {
    ncclResult_t r = check_comm(c);
    if (r != ncclSuccess) return r;
    if (!op || !scalar || type < 0 || type >= T_NUM || residence < 0 || residence > 1)
        return fail(ncclInvalidArgument, "bad PreMulSum arguments");
    if (c->nops >= 64) return fail(ncclInvalidUsage, "too many ops");
    double v = is_float(type) ? get_f(scalar, 0, type) : (double)get_i(scalar, 0, type);
    if (!is_float(type) && !is_signed(type)) v = (double)(uint64_t)get_i(scalar, 0, type);
    c->scalars[c->nops] = v;
    *op = ncclNumOps + c->nops++;
    return ncclSuccess;
}

ncclResult_t ncclRedOpDestroy(int op, struct comm *c) {
    if (!c || c->magic != COMM_MAGIC) return fail(ncclInvalidArgument, "invalid communicator");
    if (op < ncclNumOps || op >= ncclNumOps + c->nops) return fail(ncclInvalidArgument, "op %d was not created", op);
    return ncclSuccess;
}
