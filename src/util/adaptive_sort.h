/* adaptive_sort.h - a stable sort for nearly sorted arrays, its comparison
 * inlined (the attributor's spans and device index, the Overview's kernel
 * edges). */
#ifndef TRAINPROF_UTIL_ADAPTIVE_SORT_H
#define TRAINPROF_UTIL_ADAPTIVE_SORT_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ADAPTIVE_SORT(name, type, before) defines name(a, n, tmp), which sorts
 * a[0..n) in before order, stably, with tmp to merge through (room for
 * name_aside(a, n) items; n always does), the comparison inlined (qsort's
 * calls and byte copies were a sixth of the page's time). A trace is
 * mostly in order, with a few items far from their place (a step's span
 * written after its children): those are set aside (each one before the
 * last kept), sorted alone (runs of 16 by insertion, then merges, skipped
 * where two runs are already in order), and merged back from the end;
 * sorted input costs one pass. Equal items keep their order: a kept item
 * equal to one set aside came before it. */
#define ADAPTIVE_SORT(name_, type_, before_)                                                   \
    static void name_##_runs(type_ *a, size_t n, type_ *tmp)                                 \
    {                                                                                          \
        enum { RUN = 16 };                                                                     \
        for (size_t lo = 0; lo < n; lo += RUN) {                                               \
            size_t hi = lo + RUN < n ? lo + RUN : n;                                           \
            for (size_t i = lo + 1; i < hi; i++) {                                             \
                if (!before_(&a[i], &a[i - 1])) continue;                                      \
                type_ x = a[i];                                                                \
                size_t j = i;                                                                  \
                do { a[j] = a[j - 1]; j--; } while (j > lo && before_(&x, &a[j - 1]));         \
                a[j] = x;                                                                      \
            }                                                                                  \
        }                                                                                      \
        for (size_t w = RUN; w < n; w *= 2) {                                                  \
            for (size_t lo = 0; lo + w < n; lo += 2 * w) {                                     \
                size_t mid = lo + w, hi = lo + 2 * w < n ? lo + 2 * w : n;                     \
                if (!before_(&a[mid], &a[mid - 1])) continue;                                  \
                memcpy(tmp + lo, a + lo, (hi - lo) * sizeof *a);                               \
                size_t i = lo, j = mid, k = lo;                                                \
                while (i < mid && j < hi) a[k++] = before_(&tmp[j], &tmp[i]) ? tmp[j++] : tmp[i++]; \
                while (i < mid) a[k++] = tmp[i++];                                             \
                while (j < hi) a[k++] = tmp[j++];                                              \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    /* how many items name_ sets aside: the room its tmp needs */                             \
    __attribute__((unused)) static size_t name_##_aside(const type_ *a, size_t n)             \
    {                                                                                          \
        size_t s = 0;                                                                          \
        const type_ *last = NULL;                                                              \
        for (size_t i = 0; i < n; i++) {                                                       \
            if (last && before_(&a[i], last)) s++;                                             \
            else last = &a[i];                                                                 \
        }                                                                                      \
        return s;                                                                              \
    }                                                                                          \
    static void name_(type_ *a, size_t n, type_ *tmp)                                        \
    {                                                                                          \
        size_t m = 0, s = 0;                                                                   \
        for (size_t i = 0; i < n; i++) {                                                       \
            if (m && before_(&a[i], &a[m - 1])) tmp[s++] = a[i];                               \
            else a[m++] = a[i];                                                                \
        }                                                                                      \
        if (!s) return;                                                                        \
        name_##_runs(tmp, s, a + m);  /* a[m..n) is free: s items of scratch */               \
        size_t i = m, j = s, k = n;                                                            \
        while (j) a[--k] = i && before_(&tmp[j - 1], &a[i - 1]) ? a[--i] : tmp[--j];           \
    }                                                                                          \
    /* name_ with the scratch it needs in *tmp (room for *cap items), grown                    \
     * when short (its contents not kept); none when a is in order */                          \
    __attribute__((unused)) static void name_##_scratched(type_ *a, size_t n, type_ **tmp,    \
                                                          size_t *cap)                         \
    {                                                                                          \
        size_t aside = name_##_aside(a, n);                                                    \
        if (!aside) return;                                                                    \
        if (aside > *cap) {                                                                    \
            free(*tmp);                                                                        \
            if (!(*tmp = malloc(aside * sizeof **tmp))) abort();                               \
            *cap = aside;                                                                      \
        }                                                                                      \
        name_(a, n, *tmp);                                                                     \
    }

#endif
