/* event_parse.c - decode the fields of one trace event that analyses need
 * (ph, name, cat, ts, dur, pid, tid, args.device, args.name) and skip the
 * rest with a validating skipper. Works in place on the reader's window. */
#include "analyze/trace/event_parse.h"
#include "util/dfmt.h"
#include "util/hash.h"

#include <stdlib.h>
#include <string.h>

#define FAIL(e_, at_, code_, msg_) \
    do { (e_)->at = (at_); (e_)->code = (code_); (e_)->msg = (msg_); return SC_ERR; } while (0)

enum { SB_NAME, SB_CAT, SB_ARGNAME };

void tpa_strbufs_free(tpa_strbufs *sb)
{
    for (int i = 0; i < 3; i++) {
        free(sb->buf[i]);
        sb->buf[i] = NULL;
        sb->cap[i] = 0;
    }
}


/* A string id ("CPU functions") becomes a large positive number that no
 * real pid/tid uses. */
static int64_t string_id(const char *p, size_t n)
{
    return (int64_t)((tpu_hash_bytes(p, n) >> 2) | (1ULL << 61));
}

/* A string in plain ASCII (valid UTF-8, no check needed), tested 16
 * bytes per load: one load for up to 16 bytes where the window allows
 * reading past the string, else loads inside it (the last one ending at
 * its end). False sends the caller to the full UTF-8 check. */
static inline bool ascii_only(const char *s, size_t n, const char *end)
{
#ifdef __SSE2__
    if (n < 16) {
        if (end - s < 16)
            return false;
        unsigned high = (unsigned)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(const void *)s));
        return (high & ((1u << n) - 1)) == 0;
    }
    __m128i any = _mm_loadu_si128((const __m128i *)(const void *)(s + n - 16));
    for (size_t i = 0; i + 16 <= n; i += 16)
        any = _mm_or_si128(any, _mm_loadu_si128((const __m128i *)(const void *)(s + i)));
    return _mm_movemask_epi8(any) == 0;
#else
    (void)s; (void)n; (void)end;
    return false;
#endif
}

/* Reads a string value into out, decoding escapes into sb->buf[slot] only when
 * needed; plain ASCII/UTF-8 stays in the window. */
static int read_str(const char **pp, const char *end, tpa_strbufs *sb, int slot,
                    tpa_sv *out, tpa_scanerr *e)
{
    const char *s;
    size_t n;
    bool esc;
    const char *at = *pp;
    int rc = tpa_scan_string(pp, end, e, &s, &n, &esc);
    if (rc != SC_OK)
        return rc;
    if (!esc) {
        size_t bad;
        if (!ascii_only(s, n, end) && !tpa_utf8_valid(s, n, &bad))
            FAIL(e, s + bad, TPA_ERR_UTF8, "invalid UTF-8 in string");
        out->p = s;
        out->n = n;
        return SC_OK;
    }
    if (sb->cap[slot] < n + 1) {
        size_t cap = n + 64;
        char *nb = realloc(sb->buf[slot], cap);
        if (!nb)
            FAIL(e, at, TPA_ERR_LIMIT, "out of memory decoding a string");
        sb->buf[slot] = nb;
        sb->cap[slot] = cap;
    }
    size_t dn;
    if (tpa_decode_string(s, n, sb->buf[slot], &dn, e) != SC_OK)
        return SC_ERR;
    out->p = sb->buf[slot];
    out->n = dn;
    return SC_OK;
}

/* ts/dur: a number, or a quoted number (some exporters write strings). */
static inline __attribute__((always_inline)) int read_time(const char **pp, const char *end, int64_t *ns, bool *has, tpa_scanerr *e)
{
    const char *at = *pp;
    tpa_num num;
    int rc;
    size_t n_fast;
    if (*at >= '0' && *at <= '9' && (n_fast = tpa_scan_us_fast(at, end, ns))) {
        *pp = at + n_fast;
        *has = true;
        return SC_OK;
    }
    if (*at == '"') {
        const char *s; size_t n; bool esc;
        if ((rc = tpa_scan_string(pp, end, e, &s, &n, &esc)) != SC_OK)
            return rc;
        if (!tpa_parse_num_text(s, n, &num))
            FAIL(e, at, TPA_ERR_SYNTAX, "timestamp string is not a number");
    } else if ((*at >= '0' && *at <= '9') || *at == '-') {
        if ((rc = tpa_scan_number(pp, end, e, &num)) != SC_OK)
            return rc;
    } else {
        return tpa_skip_value(pp, end, e, 1);  /* null etc.: treated as absent */
    }
    /* |value| <= 4e18 ns (year 2096 as epoch ns): ts + dur, end - begin and
     * ts - first ts stay inside int64 in every analysis */
    if (!tpa_num_us_to_ns(&num, ns) || *ns > TPA_MAX_TIME_NS || *ns < -TPA_MAX_TIME_NS)
        FAIL(e, at, TPA_ERR_LIMIT, "timestamp or duration out of range");
    *has = true;
    return SC_OK;
}

static inline __attribute__((always_inline)) int read_id(const char **pp, const char *end, int64_t *id, tpa_sv *str, tpa_scanerr *e)
{
    const char *at = *pp;
    int rc;
    if (*at == '"') {
        const char *s; size_t n; bool esc;
        if ((rc = tpa_scan_string(pp, end, e, &s, &n, &esc)) != SC_OK)
            return rc;
        *id = string_id(s, n);
        str->p = s;
        str->n = n;
        return SC_OK;
    }
    uint64_t small;
    size_t n_fast;
    if (*at >= '0' && *at <= '9' && (n_fast = tpa_scan_small_uint(at, end, &small))) {
        *id = (int64_t)small;
        *pp = at + n_fast;
        return SC_OK;
    }
    if ((*at >= '0' && *at <= '9') || *at == '-') {
        tpa_num num;
        if ((rc = tpa_scan_number(pp, end, e, &num)) != SC_OK)
            return rc;
        if (!tpa_num_to_i64(&num, id))  /* huge: keep it apart, as a string id */
            *id = string_id(at, (size_t)(*pp - at));
        return SC_OK;
    }
    return tpa_skip_value(pp, end, e, 1);
}

/* After a member value: ',' (returns 1, cursor at next key) or '}' (0). */
static inline __attribute__((always_inline)) int next_member(const char **pp, const char *end, int *more, tpa_scanerr *e)
{
    const char *p = *pp;
    if (end - p > 2 && p[0] == ',') {  /* fast path: ",\"" or ", \"" */
        if (p[1] == '"') { *pp = p + 1; *more = 1; return SC_OK; }
        if (p[1] == ' ' && p[2] == '"') { *pp = p + 2; *more = 1; return SC_OK; }
    }
    p = tpa_skip_ws(p, end);
    if (p >= end) return SC_MORE;
    if (*p == '}') { *pp = p + 1; *more = 0; return SC_OK; }
    if (*p != ',')
        FAIL(e, p, TPA_ERR_SYNTAX, "expected ',' or '}' in object");
    p = tpa_skip_ws(p + 1, end);
    if (p >= end) return SC_MORE;
    if (*p != '"')
        FAIL(e, p, TPA_ERR_SYNTAX, "expected a string key");
    *pp = p;
    *more = 1;
    return SC_OK;
}

/* Opens an object: cursor at '{'; leaves it at the first key or past '}'. */
static int open_object(const char **pp, const char *end, int *more, tpa_scanerr *e)
{
    const char *p = tpa_skip_ws(*pp + 1, end);
    if (p >= end) return SC_MORE;
    if (*p == '}') { *pp = p + 1; *more = 0; return SC_OK; }
    if (*p != '"')
        FAIL(e, p, TPA_ERR_SYNTAX, "expected a string key");
    *pp = p;
    *more = 1;
    return SC_OK;
}

/* Skips a member value; plain integers and strings (most of Kineto's
 * `args`) are handled here without a call, the rest by tpa_skip_value. */
static inline __attribute__((always_inline)) int skip_member_value(const char **pp, const char *end,
                                                                   tpa_scanerr *e)
{
    const char *v = *pp;
    if (*v >= '0' && *v <= '9' && end - v > 8) {
        /* 0, or up to 8 digits without a leading zero, then no fraction */
        const char *q = v + (*v == '0' ? 1 : tpa_digit_run8(v));
        if (q < v + 8 && *q != '.' && *q != 'e' && *q != 'E' && !(*q >= '0' && *q <= '9')) {
            *pp = q;
            return SC_OK;
        }
    } else if (*v == '"') {
        const char *s; size_t n; bool esc;
        return tpa_scan_string(pp, end, e, &s, &n, &esc);
    }
    return tpa_skip_value(pp, end, e, 2);
}

#define KEY_IS(s_, n_, lit_) ((n_) == sizeof(lit_) - 1 && memcmp((s_), (lit_), (n_)) == 0)

const char *const tpa_arg_keys[TPA_ARG_COUNT] = {
    [TPA_ARG_CORRELATION] = "correlation", [TPA_ARG_EXTERNAL_ID] = "External id",
    [TPA_ARG_EXTERNAL_ID_LC] = "external id", [TPA_ARG_INPUT_DIMS] = "Input Dims",
    [TPA_ARG_GRID] = "grid", [TPA_ARG_BLOCK] = "block", [TPA_ARG_SHARED_MEMORY] = "shared memory",
    [TPA_ARG_REGISTERS] = "registers per thread", [TPA_ARG_BLOCKS_PER_SM] = "blocks per SM",
    [TPA_ARG_WARPS_PER_SM] = "warps per SM", [TPA_ARG_STREAM] = "stream",
};

/* The args members the parser notes (a tpa_arg), skips (A_OTHER) or reads. */
enum { A_OTHER = TPA_ARG_COUNT, A_DEVICE, A_OCCUPANCY, A_STEP_NUM, A_NAME };

/* k[0..n) == lit[0..n) for a constant n >= 4: word compares (overlapping
 * at the end) that the compiler unrolls, where it would call memcmp. */
static inline __attribute__((always_inline)) bool same_key(const char *k, const char *lit, size_t n)
{
    uint64_t x, y;
    uint32_t a, b;
    if (n < 8) {
        memcpy(&a, k, 4); memcpy(&b, lit, 4);
        if (a != b) return false;
        memcpy(&a, k + n - 4, 4); memcpy(&b, lit + n - 4, 4);
        return a == b;
    }
    for (size_t i = 0; i + 8 < n; i += 8) {
        memcpy(&x, k + i, 8); memcpy(&y, lit + i, 8);
        if (x != y) return false;
    }
    memcpy(&x, k + n - 8, 8); memcpy(&y, lit + n - 8, 8);
    return x == y;
}

/* The raw (undecoded) key, as tpa_obj_each and tpa_obj_find compare it;
 * its length picks the one or two names to compare with. */
static inline __attribute__((always_inline)) int arg_key(const char *k, size_t kn)
{
#define IS(lit_, id_) if (same_key(k, lit_, sizeof(lit_) - 1)) return id_
    switch (kn) {
    case 4: IS("name", A_NAME); IS("grid", TPA_ARG_GRID); break;
    case 5: IS("block", TPA_ARG_BLOCK); break;
    case 6: IS("device", A_DEVICE); IS("stream", TPA_ARG_STREAM); break;
    case 8: IS("step_num", A_STEP_NUM); break;
    case 10: IS("Input Dims", TPA_ARG_INPUT_DIMS); break;
    case 11:
        IS("External id", TPA_ARG_EXTERNAL_ID); IS("correlation", TPA_ARG_CORRELATION);
        IS("external id", TPA_ARG_EXTERNAL_ID_LC); break;
    case 12: IS("warps per SM", TPA_ARG_WARPS_PER_SM); break;
    case 13: IS("shared memory", TPA_ARG_SHARED_MEMORY); IS("blocks per SM", TPA_ARG_BLOCKS_PER_SM); break;
    case 20: IS("registers per thread", TPA_ARG_REGISTERS); break;
    case 25: IS("est. achieved occupancy %", A_OCCUPANCY); break;
    }
#undef IS
    return A_OTHER;
}

/* Notes where a tpa_arg's value is (from..to inside the event at base):
 * the first occurrence, as tpa_obj_find finds it, kept in tpa_arg order
 * among the *n noted; a second one sets arg_dup. Kineto writes them in
 * tpa_arg order: the caller appends, and comes here for the rest. */
static __attribute__((noinline)) void note_arg_out_of_order(tpa_event *ev, tpa_span32 *spans,
                                                           unsigned *n, int a, tpa_span32 sp)
{
    unsigned bit = 1u << a;
    if (ev->arg_seen & bit) {
        ev->arg_dup = true;
        return;
    }
    unsigned at = (unsigned)__builtin_popcount(ev->arg_seen & (bit - 1));
    memmove(spans + at + 1, spans + at, (*n - at) * sizeof *spans);
    spans[at] = sp;
    ev->arg_seen |= (uint16_t)bit;
    (*n)++;
}

/* One args object's members. note: this is the event's first args member
 * (the one tpa_event_args returns), whose tpa_arg values are noted. */
static int parse_args(const char **pp, const char *end, const char *base, bool note, tpa_event *ev,
                      tpa_strbufs *sb, tpa_scanerr *e)
{
    int more, rc;
    unsigned noted = 0;
    if ((rc = open_object(pp, end, &more, e)) != SC_OK)
        return rc;
    while (more) {
        const char *k; size_t kn; bool esc;
        if ((rc = tpa_scan_string(pp, end, e, &k, &kn, &esc)) != SC_OK) return rc;
        if ((rc = tpa_expect_colon(pp, end, e)) != SC_OK) return rc;
        const char *v = *pp;
        int a = arg_key(k, kn);
        if (a <= A_OTHER) {
            if ((rc = skip_member_value(pp, end, e)) != SC_OK) return rc;
            if (a != A_OTHER && note) {
                tpa_span32 sp = { (uint32_t)(v - base), (uint32_t)(*pp - v) };
                if (ev->arg_seen < 1u << a) {
                    sb->args[noted++] = sp;
                    ev->arg_seen |= (uint16_t)(1u << a);
                } else {
                    note_arg_out_of_order(ev, sb->args, &noted, a, sp);
                }
            }
        } else if (a == A_DEVICE && *v != '"' && *v != '{' && *v != '[') {
            tpa_num num;
            if ((rc = tpa_scan_number(pp, end, e, &num)) != SC_OK) return rc;
            if (!tpa_num_to_i64(&num, &ev->device)) ev->device = -1;
        } else if (a == A_OCCUPANCY && *v != '"' && *v != '{' && *v != '[') {
            if ((rc = tpa_skip_value(pp, end, e, 2)) != SC_OK) return rc;
            if (!tpa_value_f64(v, *pp, &ev->occupancy) || !(ev->occupancy >= 0)) ev->occupancy = -1;
        } else if (a == A_STEP_NUM && *v != '{' && *v != '[') {
            if ((rc = tpa_skip_value(pp, end, e, 2)) != SC_OK) return rc;
            ev->has_step_num = tpa_value_i64(v, *pp, &ev->step_num) && ev->step_num >= 0;
        } else if (a == A_NAME && *v == '"') {
            if ((rc = read_str(pp, end, sb, SB_ARGNAME, &ev->arg_name, e)) != SC_OK) return rc;
        } else if ((rc = skip_member_value(pp, end, e)) != SC_OK) {
            return rc;
        }
        if ((rc = next_member(pp, end, &more, e)) != SC_OK) return rc;
    }
    return SC_OK;
}

static void mark(tpa_span32 *sp, const char *base, const char *from, const char *to)
{
    sp->off = (uint32_t)(from - base);
    sp->len = (uint32_t)(to - from);
}

enum event_key { K_OTHER, K_PH, K_TS, K_ID, K_CAT, K_DUR, K_PID, K_TID, K_NAME, K_ARGS };

static enum event_key key_of(const char *k, size_t kn)
{
    switch (kn) {
    case 2:
        if (k[0] == 'p' && k[1] == 'h') return K_PH;
        if (k[0] == 't' && k[1] == 's') return K_TS;
        if (k[0] == 'i' && k[1] == 'd') return K_ID;
        break;
    case 3:
        if (KEY_IS(k, kn, "cat")) return K_CAT;
        if (KEY_IS(k, kn, "dur")) return K_DUR;
        if (KEY_IS(k, kn, "pid")) return K_PID;
        if (KEY_IS(k, kn, "tid")) return K_TID;
        break;
    case 4:
        if (KEY_IS(k, kn, "name")) return K_NAME;
        if (KEY_IS(k, kn, "args")) return K_ARGS;
        break;
    }
    return K_OTHER;
}

/* The event keys analyses read, recognised by comparing the quoted key as
 * one little-endian word with a constant instead of scanning for its
 * closing quote: K_OTHER when the text at p is not one of them (the caller
 * scans it). *len: the quoted key's length. */
#define QUOTED2(a, b) (0x22ULL | (uint64_t)(a) << 8 | (uint64_t)(b) << 16 | 0x22ULL << 24)
#define QUOTED3(a, b, c) ((QUOTED2(a, b) & 0xFFFFFF) | (uint64_t)(c) << 24 | 0x22ULL << 32)
#define QUOTED4(a, b, c, d) ((QUOTED3(a, b, c) & 0xFFFFFFFF) | (uint64_t)(d) << 32 | 0x22ULL << 40)
static inline enum event_key known_key(const char *p, const char *end, size_t *len)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w;
    if (end - p < 8)
        return K_OTHER;
    memcpy(&w, p, 8);
#define KEY_WORD(word_, n_, key_) \
    if ((w & ((1ULL << (8 * (n_))) - 1)) == (word_)) { *len = (n_); return key_; }
    switch (p[1]) {
    case 'p': KEY_WORD(QUOTED2('p', 'h'), 4, K_PH) KEY_WORD(QUOTED3('p', 'i', 'd'), 5, K_PID) break;
    case 't': KEY_WORD(QUOTED2('t', 's'), 4, K_TS) KEY_WORD(QUOTED3('t', 'i', 'd'), 5, K_TID) break;
    case 'n': KEY_WORD(QUOTED4('n', 'a', 'm', 'e'), 6, K_NAME) break;
    case 'c': KEY_WORD(QUOTED3('c', 'a', 't'), 5, K_CAT) break;
    case 'd': KEY_WORD(QUOTED3('d', 'u', 'r'), 5, K_DUR) break;
    case 'a': KEY_WORD(QUOTED4('a', 'r', 'g', 's'), 6, K_ARGS) break;
    case 'i': KEY_WORD(QUOTED2('i', 'd'), 4, K_ID) break;
    }
#undef KEY_WORD
#else
    (void)p; (void)end; (void)len;
#endif
    return K_OTHER;
}

static int parse_member(const char **pp, const char *end, const char *base, tpa_event *ev,
                        tpa_strbufs *sb, tpa_scanerr *e)
{
    const char *k; size_t kn; bool esc;
    int rc;
    enum event_key key = known_key(*pp, end, &kn);
    if (key != K_OTHER) {
        *pp += kn;
    } else {
        if ((rc = tpa_scan_string(pp, end, e, &k, &kn, &esc)) != SC_OK) return rc;
        key = key_of(k, kn);
    }
    if ((rc = tpa_expect_colon(pp, end, e)) != SC_OK) return rc;
    const char *v = *pp;
    switch (key) {
    case K_PH:
        if (*v == '"') {
            const char *s; size_t n;
            if ((rc = tpa_scan_string(pp, end, e, &s, &n, &esc)) != SC_OK) return rc;
            ev->ph = n ? s[0] : 0;
            return SC_OK;
        }
        break;
    case K_TS:
        rc = read_time(pp, end, &ev->ts_ns, &ev->has_ts, e);
        if (rc == SC_OK) mark(&ev->v_ts, base, v, *pp);
        return rc;
    case K_ID:
        rc = tpa_skip_value(pp, end, e, 1);
        if (rc == SC_OK) mark(&ev->v_id, base, v, *pp);
        return rc;
    case K_CAT:
        if (*v == '"')
            return read_str(pp, end, sb, SB_CAT, &ev->cat, e);
        break;
    case K_DUR:
        return read_time(pp, end, &ev->dur_ns, &ev->has_dur, e);
    case K_PID:
        rc = read_id(pp, end, &ev->pid, &ev->pid_str, e);
        if (rc == SC_OK) mark(&ev->v_pid, base, v, *pp);
        return rc;
    case K_TID:
        rc = read_id(pp, end, &ev->tid, &ev->tid_str, e);
        if (rc == SC_OK) mark(&ev->v_tid, base, v, *pp);
        return rc;
    case K_NAME:
        if (*v == '"')
            return read_str(pp, end, sb, SB_NAME, &ev->name, e);
        break;
    case K_ARGS:
        rc = *v == '{' ? parse_args(pp, end, base, !ev->v_args.len, ev, sb, e)
                       : tpa_skip_value(pp, end, e, 1);
        if (rc == SC_OK && !ev->v_args.len) mark(&ev->v_args, base, v, *pp); /* the first, as tpa_obj_find */
        return rc;
    case K_OTHER:
        break;
    }
    return tpa_skip_value(pp, end, e, 1);
}

/* memset(ev, 0, ...) in 16-byte stores unrolled: GCC makes a memset or a
 * loop of them a rep stos, slower for a struct this size, once per event. */
static inline void clear_event(tpa_event *ev)
{
#ifdef __SSE2__
    __m128i z = _mm_setzero_si128(), *w = (__m128i *)(void *)ev;
#pragma GCC unroll 16
    for (size_t i = 0; i < sizeof *ev / 16; i++)
        _mm_storeu_si128(w + i, z);
    memset((char *)ev + sizeof *ev / 16 * 16, 0, sizeof *ev % 16);
#else
    memset(ev, 0, sizeof *ev);
#endif
}

int tpa_parse_event(const char **pp, const char *end, tpa_event *ev, tpa_strbufs *sb,
                    tpa_scanerr *e)
{
    const char *base = *pp;
    clear_event(ev);
    ev->device = -1;
    ev->occupancy = -1;
    int more, rc;
    if ((rc = open_object(pp, end, &more, e)) != SC_OK)
        return rc;
    while (more) {
        if ((rc = parse_member(pp, end, base, ev, sb, e)) != SC_OK) return rc;
        if ((rc = next_member(pp, end, &more, e)) != SC_OK) return rc;
    }
    ev->raw.p = base;
    ev->raw.n = (size_t)(*pp - base);
    ev->args_marked = true;
    ev->v_arg = sb->args;
    ev->kind = (int8_t)tpa_classify(ev);  /* here, while its text is in the cache */
    ev->has_kind = true;
    return SC_OK;
}

const char *tpa_event_args(const tpa_event *ev, size_t *len)
{
    const char *a, *end = ev->raw.p + ev->raw.n;
    if (ev->args_marked) {
        a = ev->v_args.len ? ev->raw.p + ev->v_args.off : NULL;
        if (!a || *a != '{') return NULL;
        if (len) *len = ev->v_args.len;
        return a;
    }
    a = tpa_obj_find(ev->raw.p, end, "args");
    if (!a || *a != '{') return NULL;
    if (len) {
        const char *p = a;
        tpa_scanerr e;
        if (tpa_skip_value(&p, end, &e, 1) != SC_OK) return NULL;
        *len = (size_t)(p - a);
    }
    return a;
}

const char *tpa_event_arg(const tpa_event *ev, int which, const char **vend)
{
    const char *end = ev->raw.p + ev->raw.n, *v;
    if (ev->args_marked) {
        unsigned bit = 1u << which;
        if (!(ev->arg_seen & bit)) return NULL;
        const tpa_span32 *sp = &ev->v_arg[__builtin_popcount(ev->arg_seen & (bit - 1))];
        v = ev->raw.p + sp->off;
        if (vend) *vend = v + sp->len;
        return v;
    }
    const char *args = tpa_event_args(ev, NULL);
    if (!args || !(v = tpa_obj_find(args, end, tpa_arg_keys[which]))) return NULL;
    if (vend) {
        const char *p = v;
        tpa_scanerr e;
        if (tpa_skip_value(&p, end, &e, 1) != SC_OK) return NULL;
        *vend = p;
    }
    return v;
}

/* ---- helpers over complete object text (metadata members) ----------------- */

const char *tpa_obj_find(const char *obj, const char *end, const char *key)
{
    tpa_scanerr e;
    const char *p = obj;
    int more;
    size_t keylen = strlen(key);
    if (p >= end || *p != '{' || open_object(&p, end, &more, &e) != SC_OK)
        return NULL;
    while (more) {
        const char *k; size_t kn; bool esc;
        if (tpa_scan_string(&p, end, &e, &k, &kn, &esc) != SC_OK) return NULL;
        if (tpa_expect_colon(&p, end, &e) != SC_OK) return NULL;
        if (kn == keylen && memcmp(k, key, kn) == 0)
            return p;
        if (tpa_skip_value(&p, end, &e, 1) != SC_OK) return NULL;
        if (next_member(&p, end, &more, &e) != SC_OK) return NULL;
    }
    return NULL;
}

bool tpa_value_i64(const char *v, const char *end, int64_t *out)
{
    tpa_scanerr e;
    tpa_num num;
    if (!v || v >= end)
        return false;
    if (*v == '"') {
        const char *s; size_t n; bool esc;
        return tpa_scan_string(&v, end, &e, &s, &n, &esc) == SC_OK &&
               tpa_parse_num_text(s, n, &num) && tpa_num_to_i64(&num, out);
    }
    return tpa_scan_number(&v, end, &e, &num) == SC_OK && tpa_num_to_i64(&num, out);
}

bool tpa_value_str(const char *v, const char *end, char *out, size_t cap)
{
    tpa_scanerr e;
    const char *s; size_t n; bool esc;
    if (!v || v >= end || *v != '"' || tpa_scan_string(&v, end, &e, &s, &n, &esc) != SC_OK)
        return false;
    if (n >= cap) n = cap - 1;
    memcpy(out, s, n);
    out[n] = 0;
    return true;
}

/* The bytes strchr("+-.0123456789eE", c) finds (its NUL too): a table, not
 * a strchr per byte of every number the page reads. */
static const unsigned char number_byte[256] = {
    [0] = 1, ['+'] = 1, ['-'] = 1, ['.'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1,
    ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1, ['e'] = 1, ['E'] = 1};

bool tpa_value_f64(const char *v, const char *end, double *out)
{
    size_t n = 0;
    if (!v || v >= end) return false;
    if (*v == '"') v++;
    while (v + n < end && n < 63 && number_byte[(unsigned char)v[n]]) n++;
    if (!n) return false;
    return tpu_dparse(v, n, out) != 0; /* strtod's verdict and value; short numbers without it */
}

bool tpa_obj_each(const char *obj, const char *end, tpa_member_fn fn, void *user)
{
    tpa_scanerr e;
    const char *p = obj;
    int more;
    if (p >= end || *p != '{' || open_object(&p, end, &more, &e) != SC_OK)
        return false;
    while (more) {
        const char *k; size_t kn; bool esc;
        if (tpa_scan_string(&p, end, &e, &k, &kn, &esc) != SC_OK) return false;
        if (tpa_expect_colon(&p, end, &e) != SC_OK) return false;
        const char *v = p;
        if (tpa_skip_value(&p, end, &e, 1) != SC_OK) return false;
        if (!fn(k, kn, v, p, user)) return true;
        if (next_member(&p, end, &more, &e) != SC_OK) return false;
    }
    return true;
}
