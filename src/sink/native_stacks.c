/*
 * native_stacks.c - the SIGPROF sampler behind with_stack: native (see
 * native_stacks.h for the contract).
 *
 * Signal side: on_prof() reserves a ring slot with a compare-and-swap on
 * `head` (a bounded MPMC queue after D. Vyukov: slot.seq == pos means free
 * for the producer at pos, pos + 1 means filled, pos + cap means consumed
 * and free for the next lap), fills it with the thread id, the monotonic
 * time and backtrace(), and publishes it with a release store. Nothing in
 * the handler allocates or locks; backtrace() was called once before the
 * handler was installed, so libgcc's unwinder is already loaded.
 *
 * Consumer side (one thread): drain() reads filled slots in order into a
 * strmap of "tid|addr,addr,..." -> count; render() symbolizes every
 * distinct address once with dladdr (name, else module+offset) and folds.
 */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "sink/native_stacks.h"
#include "sink/strmap.h"

#define NS_DEPTH 64        /* frames kept per sample (handler frames included) */
#define NS_SKIP 2          /* on_prof and the signal trampoline, when it is not known */
#define NS_RING 4096       /* slots: ~2.2 MB; 4 s of one busy thread at 1 kHz */

typedef struct ns_slot {
    _Atomic uint64_t seq;
    uint64_t ts;
    uint32_t tid;
    int n;
    void *pc[NS_DEPTH];
} ns_slot;

/* Process-wide sampler state: one owner at a time. */
static struct {
    pthread_mutex_t lock;
    ns_slot *ring;
    _Atomic uint64_t head;
    uint64_t tail;            /* consumer only */
    _Atomic int armed;
    _Atomic int in_handler;
    _Atomic uint64_t dropped;
    int installed;
    uintptr_t restorer;       /* the signal trampoline (x86-64: __restore_rt), or 0 */
    tpi_native *owner;
} g_ns = { .lock = PTHREAD_MUTEX_INITIALIZER };

struct tpi_native {
    tpi_strsum stacks;        /* "tid|hex,hex,..." -> samples */
    unsigned hz;
};

static void on_prof(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    /* counted before looking at armed, so disarm() waits for this sample */
    atomic_fetch_add(&g_ns.in_handler, 1); /* seq_cst: pairs with disarm() */
    if (!atomic_load(&g_ns.armed)) {
        atomic_fetch_sub_explicit(&g_ns.in_handler, 1, memory_order_acq_rel);
        return;
    }
    int saved = errno;
    ns_slot *ring = g_ns.ring;
    uint64_t pos = atomic_load_explicit(&g_ns.head, memory_order_relaxed);
    for (;;) {
        ns_slot *s = &ring[pos & (NS_RING - 1)];
        uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
        if (seq == pos) {
            if (atomic_compare_exchange_weak_explicit(&g_ns.head, &pos, pos + 1,
                                                      memory_order_relaxed, memory_order_relaxed)) {
                struct timespec t;
                clock_gettime(CLOCK_MONOTONIC, &t);
                s->ts = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
                s->tid = (uint32_t)syscall(SYS_gettid);
                s->n = backtrace(s->pc, NS_DEPTH);
                atomic_store_explicit(&s->seq, pos + 1, memory_order_release);
                break;
            }
        } else if (seq < pos) { /* the consumer is a lap behind: full */
            atomic_fetch_add_explicit(&g_ns.dropped, 1, memory_order_relaxed);
            break;
        } else {
            pos = atomic_load_explicit(&g_ns.head, memory_order_relaxed);
        }
    }
    atomic_fetch_sub_explicit(&g_ns.in_handler, 1, memory_order_acq_rel);
    errno = saved;
}

unsigned tpi_native_hz(void)
{
    const char *e = getenv("TRAINPROF_NATIVE_HZ");
    long v = e && *e ? strtol(e, NULL, 10) : 0;
    return v >= 1 && v <= 10000 ? (unsigned)v : 1000;
}

/* Installs on_prof once; refuses when someone else handles SIGPROF or
 * runs ITIMER_PROF. Called with g_ns.lock held. */
static int install(void)
{
    if (g_ns.installed)
        return 0;
    struct sigaction old;
    struct itimerval it;
    if (sigaction(SIGPROF, NULL, &old) != 0 ||
        (old.sa_flags & SA_SIGINFO ? old.sa_sigaction != NULL
                                   : old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN))
        return -1;
    if (getitimer(ITIMER_PROF, &it) != 0 || it.it_value.tv_sec || it.it_value.tv_usec)
        return -1;
    void *warm[4];
    backtrace(warm, 4); /* loads libgcc_s now, not inside the first signal */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_prof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPROF, &sa, NULL) != 0)
        return -1;
    g_ns.installed = 1;
#if defined(__linux__) && defined(__x86_64__)
    /* frames above the trampoline belong to the handler (and, with
     * sanitizers, their interceptors): drain() cuts the stack there. glibc
     * reports the trampoline it registered in sa_restorer. */
    struct sigaction now;
    if (sigaction(SIGPROF, NULL, &now) == 0 && now.sa_restorer)
        g_ns.restorer = (uintptr_t)now.sa_restorer;
#endif
    return 0;
}

tpi_native *tpi_native_new(void)
{
    tpi_native *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->hz = tpi_native_hz();
    pthread_mutex_lock(&g_ns.lock);
    const char *why = NULL;
    if (g_ns.owner)
        why = "another session samples already";
    else if (!g_ns.ring && !(g_ns.ring = calloc(NS_RING, sizeof *g_ns.ring)))
        why = "out of memory";
    else if (install() != 0)
        why = "SIGPROF or ITIMER_PROF is in use by the program";
    if (!why) {
        for (uint64_t i = 0; i < NS_RING; i++)
            atomic_store(&g_ns.ring[i].seq, i);
        atomic_store(&g_ns.head, 0);
        g_ns.tail = 0;
        atomic_store(&g_ns.dropped, 0);
        g_ns.owner = n;
    }
    pthread_mutex_unlock(&g_ns.lock);
    if (why) {
        fprintf(stderr, "trainprof: warning: no native stacks: %s\n", why);
        free(n);
        return NULL;
    }
    return n;
}

int tpi_native_arm(tpi_native *n)
{
    if (!n)
        return -1;
    long us = 1000000L / (long)n->hz;
    struct itimerval it = { { us / 1000000, us % 1000000 }, { us / 1000000, us % 1000000 } };
    atomic_store_explicit(&g_ns.armed, 1, memory_order_release);
    if (setitimer(ITIMER_PROF, &it, NULL) != 0) {
        atomic_store(&g_ns.armed, 0);
        return -1;
    }
    return 0;
}

void tpi_native_disarm(tpi_native *n)
{
    if (!n)
        return;
    struct itimerval zero;
    memset(&zero, 0, sizeof zero);
    setitimer(ITIMER_PROF, &zero, NULL);
    /* seq_cst store then load, mirrored in the handler (increment then
     * load): either the handler sees armed == 0 or this loop sees it counted
     * in in_handler. A release store could be reordered after the load. */
    atomic_store(&g_ns.armed, 0);
    /* a handler that saw armed == 1 finishes in microseconds */
    for (int i = 0; i < 100000 && atomic_load(&g_ns.in_handler) > 0; i++)
        sched_yield();
}

void tpi_native_drain(tpi_native *n, uint64_t from_mono_ns, uint64_t until_mono_ns)
{
    if (!n || g_ns.owner != n)
        return;
    char key[NS_DEPTH * 17 + 16];
    uintptr_t tramp = g_ns.restorer;
    for (;;) {
        ns_slot *s = &g_ns.ring[g_ns.tail & (NS_RING - 1)];
        if (atomic_load_explicit(&s->seq, memory_order_acquire) != g_ns.tail + 1)
            break; /* empty, or being written */
        if (s->ts > until_mono_ns)
            break; /* later than what the window has seen: next drain */
        if (s->ts >= from_mono_ns) {
            size_t len = (size_t)snprintf(key, sizeof key, "%" PRIx32 "|", s->tid);
            int skip = NS_SKIP;
            for (int i = 0; tramp && i < s->n && i < 8; i++)
                if ((uintptr_t)s->pc[i] >= tramp && (uintptr_t)s->pc[i] < tramp + 16)
                    skip = i + 1;
            for (int i = skip; i < s->n && i < NS_DEPTH; i++)
                len += (size_t)snprintf(key + len, sizeof key - len, "%s%" PRIxPTR,
                                        i > skip ? "," : "", (uintptr_t)s->pc[i]);
            tpi_strsum_add(&n->stacks, key, 1);
        }
        atomic_store_explicit(&s->seq, g_ns.tail + NS_RING, memory_order_release);
        g_ns.tail++;
    }
}

/* Name of one frame into out. pc is a return address except for the
 * interrupted frame (leaf), so pc - 1 is looked up for callers. */
static void symbolize(uintptr_t pc, int leaf, char *out, size_t outlen)
{
    Dl_info di;
    uintptr_t at = leaf ? pc : pc - 1;
    if (dladdr((void *)at, &di) && di.dli_sname && di.dli_sname[0]) {
        snprintf(out, outlen, "%s", di.dli_sname);
    } else if (di.dli_fname && di.dli_fname[0]) {
        const char *base = strrchr(di.dli_fname, '/');
        snprintf(out, outlen, "%s+0x%" PRIxPTR, base ? base + 1 : di.dli_fname,
                 at - (uintptr_t)di.dli_fbase);
    } else {
        snprintf(out, outlen, "0x%" PRIxPTR, at);
    }
    for (char *p = out; *p; p++)
        if (*p == ';' || *p == ' ' || *p == '\n')
            *p = *p == ';' ? ':' : '_';
}

/* Frame name through the cache (hex address -> index in names). */
static const char *frame(tpi_strmap *cache, char ***names, size_t *nn, const char *hex, int leaf)
{
    char key[24];
    uint32_t idx;
    snprintf(key, sizeof key, "%c%s", leaf ? 'L' : 'C', hex);
    if (tpi_strmap_get(cache, key, &idx))
        return (*names)[idx];
    char name[512];
    symbolize((uintptr_t)strtoull(hex, NULL, 16), leaf, name, sizeof name);
    char **p = realloc(*names, (*nn + 1) * sizeof *p);
    if (!p)
        return "?";
    *names = p;
    p[*nn] = strdup(name);
    if (!p[*nn] || tpi_strmap_put(cache, key, (uint32_t)*nn) != 0)
        return p[*nn] ? p[(*nn)++] : "?";
    return p[(*nn)++];
}

/* One key "tid|leaf,...,root" as a folded line (root first) into line. */
static void fold_key(const char *key, const char *root, tpi_strmap *cache, char ***names,
                     size_t *nn, tpu_buf *line)
{
    const char *hexes[NS_DEPTH];
    int nf = 0;
    const char *p = strchr(key, '|');
    for (p = p ? p + 1 : key; *p && nf < NS_DEPTH;) {
        hexes[nf++] = p;
        p += strcspn(p, ",");
        p += *p == ',';
    }
    tpu_buf_reset(line);
    tpu_buf_puts(line, root);
    if (nf == 0)
        tpu_buf_puts(line, ";[unknown]");
    for (int i = nf - 1; i >= 0; i--) {
        char hex[20];
        size_t hl = strcspn(hexes[i], ",");
        snprintf(hex, sizeof hex, "%.*s", (int)(hl < sizeof hex ? hl : sizeof hex - 1), hexes[i]);
        tpu_buf_putc(line, ';');
        tpu_buf_puts(line, frame(cache, names, nn, hex, i == 0));
    }
}

uint64_t tpi_native_render(tpi_native *n, tpi_native_keep_fn keep, tpi_native_name_fn name,
                           void *ctx, tpu_buf *out)
{
    if (!n)
        return 0;
    tpi_strsum lines = { 0 };
    tpi_strmap cache = { 0 };
    uint64_t total = 0;
    char **names = NULL;
    size_t nn = 0;
    tpu_buf line = { 0 };
    for (size_t i = 0; i < n->stacks.map.cap; i++) {
        const char *key = n->stacks.map.keys[i];
        if (!key)
            continue;
        uint32_t tid = (uint32_t)strtoul(key, NULL, 16);
        if (keep && !keep(ctx, tid))
            continue;
        char root[160];
        const char *nm = name ? name(ctx, tid) : NULL;
        if (nm && *nm)
            snprintf(root, sizeof root, "%s", nm);
        else
            snprintf(root, sizeof root, "thread %" PRIu32, tid);
        for (char *q = root; *q; q++)
            if (*q == ';' || *q == '\n')
                *q = *q == ';' ? ':' : ' ';
        fold_key(key, root, &cache, &names, &nn, &line);
        uint64_t c = n->stacks.v[n->stacks.map.vals[i]];
        total += c;
        tpi_strsum_add(&lines, tpu_buf_cstr(&line), c);
    }
    tpi_strsum_write(&lines, 1, out);
    for (size_t i = 0; i < nn; i++)
        free(names[i]);
    free(names);
    tpu_buf_free(&line);
    tpi_strsum_free(&lines);
    tpi_strmap_free(&cache);
    tpi_strsum_free(&n->stacks);
    return total;
}

uint64_t tpi_native_dropped(const tpi_native *n)
{
    return n ? atomic_load(&g_ns.dropped) : 0;
}

void tpi_native_free(tpi_native *n)
{
    if (!n)
        return;
    tpi_native_disarm(n);
    pthread_mutex_lock(&g_ns.lock);
    if (g_ns.owner == n)
        g_ns.owner = NULL; /* the ring stays for the next owner; the handler stays */
    pthread_mutex_unlock(&g_ns.lock);
    tpi_strsum_free(&n->stacks);
    free(n);
}
