#include "util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tpu_buf_reserve(tpu_buf *b, size_t extra)
{
    if (b->oom)
        return -1;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int tpu_reserve_items(void *items, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : first ? first : 1;
    while (n < need)
        n *= 2;
    void *old, *grown; /* *items is a T*: copied, not read as a void* */
    memcpy(&old, items, sizeof old);
    grown = realloc(old, n * elem);
    if (!grown)
        return -1;
    memcpy(items, &grown, sizeof grown);
    *cap = n;
    return 0;
}

int tpu_reserve_index(void *items, size_t *cap, size_t id, size_t elem, size_t first)
{
    size_t had = *cap;
    if (tpu_reserve_items(items, cap, id + 1, elem, first) != 0)
        return -1;
    char *base;
    memcpy(&base, items, sizeof base);
    memset(base + had * elem, 0, (*cap - had) * elem);
    return 0;
}

void tpu_buf_append_slow(tpu_buf *b, const void *data, size_t n)
{
    if (n == 0 || tpu_buf_reserve(b, n) != 0)
        return;
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
}

const char tpu_digit_pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                  "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                  "8081828384858687888990919293949596979899";

/* Writes v's digits ending at `end`; returns where they start. Two digits
 * per division (timestamps have 6 to 12 digits). */
static char *digits_before(char *end, unsigned long long v)
{
    const char *pairs = tpu_digit_pairs;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        end -= 2;
        end[0] = pairs[2 * r];
        end[1] = pairs[2 * r + 1];
    }
    if (v >= 10) {
        end -= 2;
        end[0] = pairs[2 * v];
        end[1] = pairs[2 * v + 1];
    } else {
        *--end = (char)('0' + v);
    }
    return end;
}

void tpu_buf_put_u64(tpu_buf *b, unsigned long long v)
{
    char tmp[24];
    char *p = digits_before(tmp + sizeof tmp, v);
    tpu_buf_append(b, p, (size_t)(tmp + sizeof tmp - p));
}

void tpu_buf_put_i64(tpu_buf *b, long long v)
{
    char tmp[24];
    unsigned long long m = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    char *p = digits_before(tmp + sizeof tmp, m);
    if (v < 0)
        *--p = '-';
    tpu_buf_append(b, p, (size_t)(tmp + sizeof tmp - p));
}

void tpu_buf_put_us(tpu_buf *b, unsigned long long ns)
{
    char tmp[32];
    char *end = tmp + sizeof tmp, *p = end;
    unsigned frac = (unsigned)(ns % 1000);
    if (frac) {
        int n = 3;
        while (frac % 10 == 0) { /* no trailing zeros */
            frac /= 10;
            n--;
        }
        for (int i = 0; i < n; i++, frac /= 10)
            *--p = (char)('0' + frac % 10);
        *--p = '.';
    }
    p = digits_before(p, ns / 1000);
    tpu_buf_append(b, p, (size_t)(end - p));
}

void tpu_buf_vprintf(tpu_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) {
        va_end(ap2);
        return;
    }
    if ((size_t)n < sizeof small) {
        tpu_buf_append(b, small, (size_t)n);
    } else if (tpu_buf_reserve(b, (size_t)n) == 0) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

void tpu_buf_printf(tpu_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tpu_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

const char *tpu_buf_cstr(tpu_buf *b)
{
    if (!b->data)
        return "";
    return b->data;
}

void tpu_buf_reset(tpu_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

char *tpu_buf_detach(tpu_buf *b)
{
    char *p = b->data;
    if (!p)
        p = calloc(1, 1);
    b->data = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
    return p;
}

void tpu_buf_free(tpu_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}

void *tpu_array_grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return p;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need) c *= 2;
    void *q = realloc(p, c * elem);
    if (!q) abort();
    *cap = c;
    return q;
}
