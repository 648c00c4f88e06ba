/* classify.c - what an event is (by category and name), plus the small
 * parsing/formatting helpers the subcommands share. */
#include "analyze/trace/trace.h"
#include "util/json.h"
#include "util/names_rule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

static bool sv_eq(tpa_sv s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

static inline unsigned char lower(unsigned char c)
{
    return (unsigned char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
}

/* Case-insensitive substring search; needle is lower case. Runs on every
 * kernel name, so the first byte is filtered before comparing the rest. */
static bool sv_icontains(tpa_sv s, const char *needle)
{
    size_t n = strlen(needle);
    if (n > s.n) return false;
    unsigned char c0 = (unsigned char)needle[0];
    const unsigned char *p = (const unsigned char *)s.p;
    for (size_t i = 0; i + n <= s.n; i++) {
        if (lower(p[i]) != c0) continue;
        size_t k = 1;
        while (k < n && lower(p[i + k]) == (unsigned char)needle[k]) k++;
        if (k == n) return true;
    }
    return false;
}

bool tpa_step_number(tpa_sv name, int64_t *num)
{
    static const char pre[] = "ProfilerStep#";
    size_t pn = sizeof pre - 1;
    if (name.n <= pn || memcmp(name.p, pre, pn) != 0)
        return false;
    int64_t v = 0;
    for (size_t i = pn; i < name.n; i++) {
        if (name.p[i] < '0' || name.p[i] > '9')
            return false;
        int d = name.p[i] - '0';  /* still a step past int64: the number saturates */
        v = v > (INT64_MAX - d) / 10 ? INT64_MAX : v * 10 + d;
    }
    *num = v;
    return true;
}

/* Does s (at least n bytes) start with the lower-case lit, ignoring case? */
static bool iprefix(const unsigned char *s, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    if (k > n) return false;
    for (size_t i = 0; i < k; i++)
        if (lower(s[i]) != (unsigned char)lit[i]) return false;
    return true;
}

/* The first i >= from where p[i] and p[i + 1] are the lower-case letters a
 * and b in any case, or n: 16 places at a time (these scans run on every
 * host op name; OR 0x20 maps a byte to a letter only from its two cases). */
static size_t next_pair_icase(const unsigned char *p, size_t n, size_t from, char a, char b)
{
    size_t i = from;
#ifdef __SSE2__
    const __m128i low = _mm_set1_epi8(0x20), va = _mm_set1_epi8(a), vb = _mm_set1_epi8(b);
    for (; i + 17 <= n; i += 16) {
        __m128i x = _mm_or_si128(_mm_loadu_si128((const __m128i *)(const void *)(p + i)), low);
        __m128i y = _mm_or_si128(_mm_loadu_si128((const __m128i *)(const void *)(p + i + 1)), low);
        unsigned hit = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(x, va), _mm_cmpeq_epi8(y, vb)));
        if (hit) return i + (size_t)__builtin_ctz(hit);
    }
#endif
    for (; i + 1 < n; i++)
        if ((p[i] | 0x20) == (unsigned char)a && (p[i + 1] | 0x20) == (unsigned char)b) return i;
    return n;
}

/* DataLoader iteration, batch production, the wait for a batch: "data"
 * followed by loader / _batch / _load / " loading" / _wait, any case. One
 * pass: this runs on most host op names. */
bool tpa_name_is_data_loading(tpa_sv name)
{
    const unsigned char *p = (const unsigned char *)name.p;
    for (size_t i = next_pair_icase(p, name.n, 0, 'd', 'a'); i + 4 <= name.n;
         i = next_pair_icase(p, name.n, i + 1, 'd', 'a'))
        if (iprefix(p + i, name.n - i, "data") && tpu_data_loading_tail(name.p + i + 4, name.n - i - 4))
            return true;
    return false;
}

/* "nccl" or "rccl" in any case, in one pass (kernel names are long). */
static bool is_comm_kernel(tpa_sv name)
{
    const unsigned char *p = (const unsigned char *)name.p;
    size_t i = 1;
#ifdef __SSE2__
    /* Kernel names are long templates: look for "ccl" 16 places at a time. */
    const __m128i lower = _mm_set1_epi8(0x20);
    const __m128i c = _mm_set1_epi8('c'), l = _mm_set1_epi8('l');
    for (; i + 18 <= name.n; i += 16) {
        __m128i a = _mm_or_si128(_mm_loadu_si128((const __m128i *)(const void *)(p + i)), lower);
        __m128i b = _mm_or_si128(_mm_loadu_si128((const __m128i *)(const void *)(p + i + 1)), lower);
        __m128i d = _mm_or_si128(_mm_loadu_si128((const __m128i *)(const void *)(p + i + 2)), lower);
        unsigned hit = (unsigned)_mm_movemask_epi8(_mm_and_si128(
            _mm_and_si128(_mm_cmpeq_epi8(a, c), _mm_cmpeq_epi8(b, c)), _mm_cmpeq_epi8(d, l)));
        for (; hit; hit &= hit - 1) {
            unsigned char before = p[i + (size_t)__builtin_ctz(hit) - 1] | 0x20;
            if (before == 'n' || before == 'r') return true;
        }
    }
#endif
    for (; i + 3 <= name.n; i++) {
        if ((p[i] | 0x20) != 'c' || (p[i + 1] | 0x20) != 'c' || (p[i + 2] | 0x20) != 'l') continue;
        unsigned char b = p[i - 1] | 0x20;
        if (b == 'n' || b == 'r') return true;
    }
    return false;
}

static bool sv_ends(tpa_sv s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n >= n && memcmp(s.p + s.n - n, lit, n) == 0;
}

/* Device-side work by category: the Kineto names of every generation
 * (lower case since PyTorch 1.11, capitalised in 1.8-1.10), MTIA's CCP
 * events and the legacy autograd export's "CUDA functions" process. */
static int device_kind(const tpa_event *ev)
{
    tpa_sv c = ev->cat;
    if (sv_eq(c, "kernel") || sv_eq(c, "Kernel") || sv_eq(c, "mtia_ccp_events"))
        return is_comm_kernel(ev->name) ? TPA_K_COMM : TPA_K_KERNEL;
    if (sv_eq(c, "gpu_memcpy") || sv_eq(c, "Memcpy")) return TPA_K_MEMCPY;
    if (sv_eq(c, "gpu_memset") || sv_eq(c, "Memset")) return TPA_K_MEMSET;
    if (sv_eq(c, "gpu_user_annotation")) return TPA_K_GPU_ANNOTATION;
    if (sv_eq(c, "collective_comm")) return TPA_K_COMM;
    if (ev->on_device || (c.n == 0 && ev->pid_str.n == 14 &&  /* "CUDA functions" / "CUDA Functions" */
                          iprefix((const unsigned char *)ev->pid_str.p, 14, "cuda functions"))) {
        if (sv_icontains(ev->name, "memcpy")) return TPA_K_MEMCPY;
        if (sv_icontains(ev->name, "memset")) return TPA_K_MEMSET;
        return is_comm_kernel(ev->name) ? TPA_K_COMM : TPA_K_KERNEL;
    }
    return -1;
}

/* Host calls into a device runtime or driver: cuda_runtime, cuda_driver,
 * cuda_sync, hip_*, Runtime (1.8-1.10), mtia_runtime, xpu_runtime,
 * privateuse1_driver, ... */
static bool is_runtime_cat(tpa_sv c)
{
    if (c.n >= 4 && (memcmp(c.p, "hip_", 4) == 0 || memcmp(c.p, "cuda", 4) == 0)) return true;
    return sv_eq(c, "Runtime") || sv_ends(c, "_runtime") || sv_ends(c, "_driver");
}

int tpa_classify(const tpa_event *ev)
{
    int64_t n;
    if (ev->cat.n < 32) {  /* every known category is short */
        int k = device_kind(ev);
        if (k >= 0) return k;
        if (is_runtime_cat(ev->cat)) return TPA_K_RUNTIME;
    }
    if (tpa_step_number(ev->name, &n)) return TPA_K_STEP;
    if (sv_eq(ev->cat, "user_annotation")) return TPA_K_ANNOTATION;
    return TPA_K_CPU;
}

bool tpa_event_step(const tpa_event *ev, int kind, int64_t *num)
{
    if (!ev->has_ts) return false;
    if (kind == TPA_K_STEP) return tpa_step_number(ev->name, num);
    if (ev->has_step_num && (kind == TPA_K_CPU || kind == TPA_K_ANNOTATION)) {
        *num = ev->step_num;
        return true;
    }
    return false;
}

/* Whether text at p (n bytes left) starts with the lower-case word w, ignoring case. */
static bool starts_icase(const unsigned char *p, size_t n, const char *w, size_t wn)
{
    if (wn > n) return false;
    for (size_t k = 0; k < wn; k++)
        if (lower(p[k]) != (unsigned char)w[k]) return false;
    return true;
}

/* "train_step", "training_step", "train step" or "training step" anywhere
 * in s, ignoring case: one pass over the name instead of four. */
static bool sv_icontains_train_step(tpa_sv s)
{
    const unsigned char *p = (const unsigned char *)s.p;
    for (size_t i = next_pair_icase(p, s.n, 0, 't', 'r'); i + 10 <= s.n; i = next_pair_icase(p, s.n, i + 1, 't', 'r')) {
        if (!starts_icase(p + i, s.n - i, "train", 5)) continue;
        size_t j = i + 5;
        if (starts_icase(p + j, s.n - j, "ing", 3)) {
            size_t k = j + 3;
            if (k < s.n && (p[k] == '_' || p[k] == ' ') && starts_icase(p + k + 1, s.n - k - 1, "step", 4)) return true;
        }
        if (j < s.n && (p[j] == '_' || p[j] == ' ') && starts_icase(p + j + 1, s.n - j - 1, "step", 4)) return true;
    }
    return false;
}

bool tpa_name_is_step_like(tpa_sv name)
{
    if (name.n >= 6 && memcmp(name.p, "## ", 3) == 0 && memcmp(name.p + name.n - 3, " ##", 3) == 0)
        return true;
    return sv_icontains_train_step(name);
}

bool tpa_kind_is_gpu(int kind)
{
    return kind == TPA_K_KERNEL || kind == TPA_K_COMM || kind == TPA_K_MEMCPY ||
           kind == TPA_K_MEMSET || kind == TPA_K_GPU_ANNOTATION;
}

bool tpa_cat_listed(const char *list, tpa_sv cat)
{
    const char *p = list;
    while (*p) {
        const char *q = strchr(p, ',');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        if (n == cat.n && (n == 0 || memcmp(p, cat.p, n) == 0)) return true;  /* cat.p NULL when empty */
        if (!q) break;
        p = q + 1;
    }
    return false;
}

/* ---- option values ----------------------------------------------------------- */

static bool parse_scaled(const char *s, const char *end, int64_t *ns)
{
    char tmp[64];
    size_t n = (size_t)(end - s);
    if (n == 0 || n >= sizeof tmp) return false;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    char *unit;
    double v = strtod(tmp, &unit);
    if (unit == tmp || !isfinite(v) || v < 0) return false;
    double mul;
    if (!*unit || !strcmp(unit, "us")) mul = 1e3;
    else if (!strcmp(unit, "ns")) mul = 1;
    else if (!strcmp(unit, "ms")) mul = 1e6;
    else if (!strcmp(unit, "s")) mul = 1e9;
    else return false;
    if (v * mul > 9.2e18) return false;
    *ns = (int64_t)llround(v * mul);
    return true;
}

bool tpa_parse_duration(const char *s, int64_t *ns)
{
    return parse_scaled(s, s + strlen(s), ns);
}

bool tpa_parse_time_range(const char *s, tpa_range *r)
{
    const char *dash = strchr(s, '-');
    if (!dash) return false;
    r->set = true;
    if (!parse_scaled(s, dash, &r->lo)) return false;
    if (!dash[1]) { r->hi = INT64_MAX; return true; }
    return parse_scaled(dash + 1, dash + strlen(dash), &r->hi) && r->hi >= r->lo;
}

bool tpa_parse_range(const char *s, tpa_range *r)
{
    char *end;
    long long lo = strtoll(s, &end, 10);
    if (end == s || lo < 0) return false;
    r->set = true;
    r->lo = r->hi = lo;
    if (!*end) return true;
    if (*end != '-') return false;
    if (!end[1]) { r->hi = INT64_MAX; return true; }
    const char *h = end + 1;
    long long hi = strtoll(h, &end, 10);
    if (end == h || *end || hi < lo) return false;
    r->hi = hi;
    return true;
}

/* ---- formatting -------------------------------------------------------------- */

void tpa_fmt_dur(char *buf, size_t n, int64_t ns)
{
    double a = fabs((double)ns);
    if (a < 1e3) snprintf(buf, n, "%lld ns", (long long)ns);
    else if (a < 1e6) snprintf(buf, n, "%.3f us", ns / 1e3);
    else if (a < 1e9) snprintf(buf, n, "%.3f ms", ns / 1e6);
    else snprintf(buf, n, "%.3f s", ns / 1e9);
}

void tpa_json_str(FILE *f, const char *s, size_t n)
{
    tpu_buf b = {0};
    tpu_buf_putc(&b, '"');
    tpu_json_escape(&b, s, n);
    tpu_buf_putc(&b, '"');
    fwrite(b.data, 1, b.len, f);
    tpu_buf_free(&b);
}
